"""Issue 5 end to end: persisted versions, privileges from HMS, cache pools, audit log."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.admin.client import AdminClient
from catalogd.hms.client import MetastoreClient
from subscriber.api import CatalogSubscriber
from subscriber.cache import ChangeEvent
from subscriber.protocol.errors import CatalogError

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(600)]
hms_thrift = idl.hive_metastore
Cmd = idl.catalog_service.TAdminCommand


@pytest.fixture(scope="module")
def catalogd(warehouse, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogdProcess]:  # noqa: ANN001
    proc = CatalogdProcess(
        warehouse.uri,
        tmp_path_factory.mktemp("catalogd-state"),
        extra=["--change-detection", "off"],
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def test_versions_never_go_backwards_across_kill_9(warehouse, tmp_path: Path) -> None:  # noqa: ANN001
    data = tmp_path / "catalogd"
    first = CatalogdProcess(warehouse.uri, data, extra=["--change-detection", "off"]).start()
    seen: list[tuple[str, int]] = []
    stop = threading.Event()

    def burst(endpoint: str) -> None:
        client = AdminClient(endpoint, timeout_s=5)
        i = 0
        while not stop.is_set():
            name = f"burst{i % 7}"
            try:
                client.call(Cmd.CACHE_POOL_ADD, options={"pool": name})
                client.call(Cmd.CACHE_POOL_REMOVE, options={"pool": name})
            except CatalogError:
                pass  # catalogd is being killed and restarted under us
            i += 1

    try:
        with CatalogSubscriber(first.endpoint) as sub:
            sub.add_listener(lambda e: seen.append((sub.service_id, e.version)))
            sub.wait_synced(30)
            thread = threading.Thread(target=burst, args=(first.admin_endpoint,), daemon=True)
            thread.start()
            wait_until(lambda: sub.version > first.version + 50, what="a burst of changes")
            first.kill()  # SIGKILL in the middle of the burst
            stop.set()
            thread.join(10)
            before = max(v for _, v in seen)
            old_service = sub.service_id
            second = CatalogdProcess(
                warehouse.uri, data, port=first.port, extra=["--change-detection", "off"]
            )
            second.admin_endpoint, second.admin_port = first.admin_endpoint, first.admin_port
            second.start()
            try:
                wait_until(lambda: sub.service_id == second.service_id, what="resync")
                stop.clear()
                thread = threading.Thread(target=burst, args=(second.admin_endpoint,), daemon=True)
                thread.start()
                wait_until(lambda: sub.version > second.version + 20, what="changes after restart")
                stop.set()
                thread.join(10)
                after = [v for sid, v in seen if sid != old_service]
                assert after and min(after) > before, (before, after[:5])
                assert sub.version > before
                assert second.version > before  # the first version it published
            finally:
                second.stop()
    finally:
        stop.set()
        first.kill()


def test_privileges_from_hms_reach_subscribers(catalogd: CatalogdProcess, warehouse) -> None:  # noqa: ANN001
    with CatalogSubscriber(catalogd.endpoint) as sub:
        sub.wait_synced(30)
        roles = {p.name for p in sub.list_principals("ROLE")}
        assert {"analyst", "etl"} <= roles
        cases = [
            ("alice", [], "SELECT", "sales", "orders", True),  # role via user membership
            ("zoe", ["analysts"], "SELECT", "sales", "customers", True),  # db grant via group role
            ("zoe", ["analysts"], "INSERT", "sales", "orders", False),
            ("bob", [], "ALL", "analytics", "daily_revenue", True),  # etl: ALL on analytics
            ("bob", [], "SELECT", "sales", "orders", False),
            ("carol", ["nobody"], "SELECT", "sales", None, False),
        ]
        for user, groups, level, db, table, expected in cases:
            assert sub.check_privilege(user, groups, level, db, table) is expected, (
                user,
                level,
                db,
                table,
            )
        # Grant through the real HMS Thrift API; invalidate reloads privileges.
        grant = hms_thrift.PrivilegeBag(
            privileges=[
                hms_thrift.HiveObjectPrivilege(
                    hiveObject=hms_thrift.HiveObjectRef(
                        objectType=hms_thrift.HiveObjectType.TABLE,
                        dbName="sales",
                        objectName="orders",
                    ),
                    principalName="carol",
                    principalType=hms_thrift.PrincipalType.USER,
                    grantInfo=hms_thrift.PrivilegeGrantInfo(
                        privilege="SELECT",
                        createTime=0,
                        grantor="admin",
                        grantorType=hms_thrift.PrincipalType.USER,
                        grantOption=False,
                    ),
                )
            ]
        )
        with MetastoreClient(warehouse.uri) as client:
            client.raw.grant_privileges(grant)
        try:
            code, answer, out = catalogd.admin("invalidate")
            assert code == 0, out
            sub.wait_for_version(answer["version"], 30)
            assert sub.check_privilege("carol", [], "SELECT", "sales", "orders")
            assert any(p.name == "carol" for p in sub.list_principals("USER"))
        finally:
            with MetastoreClient(warehouse.uri) as client:
                client.raw.revoke_privileges(grant)
        code, answer, out = catalogd.admin("invalidate")
        sub.wait_for_version(answer["version"], 30)
        assert not sub.check_privilege("carol", [], "SELECT", "sales", "orders")


def test_cache_pool_lifecycle_conflicts_and_persistence(warehouse, tmp_path: Path) -> None:  # noqa: ANN001
    data = tmp_path / "catalogd"
    proc = CatalogdProcess(warehouse.uri, data, extra=["--change-detection", "off"]).start()
    proc.wait_loaded()
    pool = f"hot{uuid.uuid4().hex[:4]}"
    try:
        with CatalogSubscriber(proc.endpoint) as sub:
            sub.wait_synced(30)
            events: list[ChangeEvent] = []
            sub.add_listener(events.append)
            code, answer, out = proc.admin(
                "cache-pool", "add", pool, "--owner", "ops", "--limit", "1000000"
            )
            assert code == 0, out
            sub.wait_for_version(answer["version"], 10)
            pools = {p.pool_name: p for p in sub.list_cache_pools()}
            assert pools[pool].owner_name == "ops" and pools[pool].limit == 1000000
            code, answer, out = proc.admin("cache", "sales.orders", "--pool", pool)
            assert code == 0, out
            sub.wait_for_version(answer["version"], 10)
            assert sub.cached_tables(pool) == ["sales.orders"]
            assert all(p.is_marked_cached for p in sub.list_partitions("sales.orders"))
            code, answer, out = proc.admin("cache", "sales.customers", "--pool", pool)
            assert code == 0, out
            code, answer, out = proc.admin("cache-pool", "remove", pool)
            assert (
                code == 6 and answer["status"] == "CONFLICT" and "sales.orders" in answer["message"]
            )
            # Bad input: negative limit, unknown pool, unknown table, unknown partition.
            assert proc.admin("cache-pool", "add", "neg", "--limit", "-5")[0] == 2
            assert proc.admin("cache", "sales.orders", "--pool", "nosuchpool")[0] == 4
            assert proc.admin("cache", "sales.nosuch", "--pool", pool)[0] == 4
            assert (
                proc.admin(
                    "cache",
                    "sales.orders",
                    "--partition",
                    "dt=1999/region=xx",
                    "--pool",
                    pool,
                )[0]
                == 4
            )
            code, answer, out = proc.admin("cache-pool", "alter", pool, "--no-limit")
            assert code == 0, out
            sub.wait_for_version(answer["version"], 10)
            assert {p.pool_name: p for p in sub.list_cache_pools()}[pool].limit is None
            code, answer, out = proc.admin("uncache", "sales.orders")
            assert code == 0, out
            sub.wait_for_version(answer["version"], 10)
            assert sub.cached_tables(pool) == ["sales.customers"]
            assert not any(p.is_marked_cached for p in sub.list_partitions("sales.orders"))
        code, _, out = proc.admin("audit", "--limit", "50")
        assert code == 0, out
        text = subprocess.run(
            [
                sys.executable,
                "-m",
                "catalogd.cli",
                "admin",
                "--endpoint",
                proc.admin_endpoint,
                "audit",
                "--limit",
                "50",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert "cache_pool_add" in text and "conflict" in text and f'"pool": "{pool}"' in text
    finally:
        proc.stop()
    # Persistence: a new process on the same state store has the pool and the marks.
    again = CatalogdProcess(warehouse.uri, data, extra=["--change-detection", "off"]).start()
    try:
        again.wait_loaded()
        with CatalogSubscriber(again.endpoint) as sub:
            sub.wait_synced(30)
            assert pool in {p.pool_name for p in sub.list_cache_pools()}
            wait_until(
                lambda: sub.cached_tables(pool) == ["sales.customers"], what="marks after restart"
            )
        code, answer, out = again.admin("uncache", "sales.customers")
        assert code == 0, out
        assert again.admin("cache-pool", "remove", pool)[0] == 0
    finally:
        again.stop()
