"""A catalogd process with CURVE keys: subscribers and admins by key, revocation by SIGHUP.

One process (real HMS) and its real CLI: keys made with ``catalogd keys
generate``, admin commands with ``--key/--server-key``, ``systemctl reload``'s
SIGHUP after a key file is removed.
"""

from __future__ import annotations

import shutil
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from polling import wait_until
from support.catalogd_process import CatalogdProcess

import idl
from catalogd.cli import main as catalogd
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber
from subscriber.protocol.errors import AuthenticationError

pytestmark = [pytest.mark.hms, pytest.mark.timeout(300)]


@dataclass
class Secured:
    proc: CatalogdProcess
    own: Path
    subscribers: Path
    hms: EmbeddedMetastore

    def admin(self, key: str, *args: str) -> tuple[int, dict, str]:
        files = ["--server-key", str(self.own / "server.key")]
        files += ["--key", str(self.own / f"{key}.key_secret")]
        return self.proc.admin(*files, *args, timeout=60)

    def subscriber(self, name: str) -> CatalogSubscriber:
        return CatalogSubscriber(
            self.proc.endpoint,
            client_id=f"{name}-driver",
            server_key=self.own / "server.key",
            client_key=self.own / f"{name}.key_secret",
        ).start()


def new_database(hms: EmbeddedMetastore) -> str:
    name = f"sec_{uuid.uuid4().hex[:6]}"
    with MetastoreClient(hms.uri) as client:
        client.raw.create_database(
            idl.hive_metastore.Database(
                name=name,
                description="",
                locationUri=f"file:{hms.warehouse_dir}/{name}.db",
                parameters={},
            )
        )
    return name


@pytest.fixture
def secured(hms: EmbeddedMetastore, tmp_path: Path) -> Iterator[Secured]:
    own, keys = tmp_path / "own", tmp_path / "keys"
    for name in ("server", "alice", "bob", "root"):
        assert catalogd(["keys", "generate", name, "--dir", str(own)]) == 0
    (keys / "subscribers").mkdir(parents=True)
    (keys / "admin").mkdir()
    for name in ("alice", "bob"):
        shutil.copy(own / f"{name}.key", keys / "subscribers")
    shutil.copy(own / "root.key", keys / "admin")
    extra = ["--change-detection", "off", "--server-key", str(own / "server.key_secret")]
    extra += ["--subscriber-keys", str(keys / "subscribers"), "--admin-keys", str(keys / "admin")]
    proc = CatalogdProcess(hms.uri, tmp_path / "data", extra=extra).start()
    try:
        yield Secured(proc, own, keys / "subscribers", hms)
    finally:
        proc.stop()


def test_keys_name_subscribers_and_admins_and_sighup_revokes(secured: Secured) -> None:
    alice, bob = secured.subscriber("alice"), secured.subscriber("bob")
    try:
        alice.wait_synced(60)
        bob.wait_synced(60)
        wait_until(
            lambda: len(secured.admin("root", "status")[1]["detail"]["subscribers"]) == 2,
            60,
            "both subscribers in status",
        )
        code, answer, _ = secured.admin("root", "status")
        detail = answer["detail"]
        assert detail["security"]["mode"] == "curve"
        assert {s["key"] for s in detail["subscribers"].values()} == {"alice", "bob"}
        code, _, output = secured.admin("alice", "invalidate")  # a subscriber key
        assert code == 3 and "refused this client's key" in output
        code, answer, output = secured.admin("root", "invalidate")
        assert code == 0, output
        bob.wait_for_version(answer["version"], 60)
        code, answer, _ = secured.admin("root", "audit")
        by = {(r["requester"], r["command"]) for r in answer["detail"]["records"]}
        assert ("root", "invalidate") in by and ("alice", "connect") in by

        version_before = alice.version
        (secured.subscribers / "alice.key").unlink()
        assert secured.proc.proc is not None
        secured.proc.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: alice.last_error is not None, 30, "alice to be cut off")
        db = new_database(secured.hms)  # something new to publish
        code, answer, output = secured.admin("root", "invalidate", db)
        assert code == 0, output
        assert answer["version"] > version_before
        bob.wait_for_version(answer["version"], 60)
        wait_until(lambda: alice.is_stale, 30, "alice to go stale")
        assert alice.version < answer["version"]
        assert isinstance(alice.last_error, AuthenticationError)
        assert "revoked subscribers keys: alice" in secured.proc.log_tail(20_000)
    finally:
        alice.close()
        bob.close()
