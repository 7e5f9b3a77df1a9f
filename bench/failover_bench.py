"""HA failover time, and what HA costs in steady state.

::

    .venv/bin/python bench/failover_bench.py            # 20 failovers, 200 changes per mode
    .venv/bin/python bench/failover_bench.py --quick    # 5 failovers, 100 changes

Set-up: an embedded HMS run by this benchmark (one database, a few tables), a
PostgreSQL database of its own on 127.0.0.1:5432 as the shared state store, and
two ``catalogd serve --ha`` processes (lease ``--lease`` s, renewed every
``--renew`` s, heartbeats every ``--heartbeat`` s), ``--subscribers`` subscribers
in this process given both endpoints.

1. **Failover**: ``kill -9`` of the active; the time until every subscriber is
   synced on the new active (its service id); the killed node is restarted as the
   standby; ``--failovers`` times. Bound (see docs/DESIGN.md, "High availability")::

       T <= lease + renew + t_takeover + t_snapshot
            when stale_after x heartbeat <= lease (subscribers are waiting on the
            standby's endpoint before it binds; else add that difference)

2. **Cost of HA**: the same catalogd with HA off (one process) and on (two), one
   subscriber, alternating rounds: ``admin refresh DB.TABLE`` latency (HMS read,
   fenced reservation, publish) and propagation of a ``cache-pool add`` (admin
   call start -> the subscriber applied its version; a fenced state write, a
   fenced reservation, publish). Target: HA on at most 10% worse at p50 and p99.
"""

from __future__ import annotations

import argparse
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from support.measure import Result, add_output_argument, cpu_note, finish, percentile

import idl
from catalogd.addresses import free_port
from catalogd.admin.client import AdminClient
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber

Cmd = idl.catalog_service.TAdminCommand
hms_thrift = idl.hive_metastore
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/{db}"
READY = re.compile(r"initial catalog published: version (\d+).*service id (\w+)")
STANDBY = re.compile(r"standby: catalog loaded: version (\d+); service id (\w+)")
DB = "failover"


class Node:
    """One ``catalogd serve`` process on fixed ports, logging to a file."""

    def __init__(self, name: str, work: Path, hms_uri: str, extra: list[str]) -> None:
        self.name = name
        self.dir = work / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.admin = f"tcp://127.0.0.1:{free_port()}"
        self.log = self.dir / "catalogd.log"
        self.command = [
            sys.executable, "-m", "catalogd.cli", "serve", "--hms", hms_uri,
            "--bind", self.endpoint, "--pub-bind", "tcp://127.0.0.1:*",
            "--admin-bind", self.admin, "--web-bind", "127.0.0.1:0", "--data-dir", str(self.dir),
            "--change-detection", "off", *extra,
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None
        self.offset = 0
        self.service_id = ""

    def start(self) -> Node:
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT)
        return self

    def wait(self, pattern: re.Pattern[str], timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = pattern.search(self.log.read_bytes()[self.offset :].decode(errors="replace"))
            if match:
                self.service_id = match.group(2)
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.02)
        raise RuntimeError(f"{self.name}: {pattern.pattern} not seen in {timeout}s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def state_database() -> Iterator[str]:
    name = f"catalogd_failover_{secrets.token_hex(4)}"
    admin = sa.create_engine(POSTGRES.format(db="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield POSTGRES.format(db=name)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def _prepare_hms(hms: EmbeddedMetastore, tables: int) -> None:
    with MetastoreClient(hms.uri) as client:
        location = f"file:{hms.warehouse_dir}/{DB}.db"
        client.call(
            "create_database",
            hms_thrift.Database(name=DB, description="", parameters={}, locationUri=location),
        )
        for i in range(tables):
            table = thrift_table(DB, f"t{i}", f"{location}/t{i}", columns=[("x", "int")])
            client.call("create_table", table)


def _wait(condition, timeout: float = 60.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.005)


def failovers(args: argparse.Namespace, work: Path, hms_uri: str, url: str) -> list[float]:
    ha = _ha_flags(args, url)
    nodes = [Node("a", work, hms_uri, ha).start(), Node("b", work, hms_uri, ha)]
    nodes[0].wait(READY)
    nodes[1].start().wait(STANDBY)
    subs = [
        CatalogSubscriber([n.endpoint for n in nodes], stale_after_heartbeats=3)
        for _ in range(args.subscribers)
    ]
    times: list[float] = []
    try:
        for sub in subs:
            sub.start()
        for sub in subs:
            sub.wait_synced(60)
        active, standby = nodes
        for i in range(args.failovers):
            time.sleep(args.renew * (0.2 + 0.6 * (i % 5) / 4))  # vary the phase of the kill
            started = time.monotonic()
            active.kill()
            standby.wait(READY, timeout=60)
            new = standby.service_id
            _wait(lambda new=new: all(s.service_id == new and s.is_synced for s in subs))
            times.append(time.monotonic() - started)
            print(f"failover {i + 1}: {times[-1]:.2f} s", flush=True)
            active.start().wait(STANDBY)
            active, standby = standby, active
    finally:
        for sub in subs:
            sub.close()
        for node in nodes:
            node.kill()
    return times


def _ha_flags(args: argparse.Namespace, url: str) -> list[str]:
    return [
        "--ha", "--ha-lease", str(args.lease), "--ha-renew-interval", str(args.renew),
        "--state-db", url, "--heartbeat-interval", str(args.heartbeat),
    ]  # fmt: skip


def steady_state(
    args: argparse.Namespace, work: Path, hms_uri: str, url_off: str, url_on: str
) -> dict[str, dict[str, list[float]]]:
    """Rounds alternating HA off and on; per mode the admin-refresh and propagation samples."""
    off = [Node("off", work, hms_uri, ["--state-db", url_off])]
    on = [Node(n, work, hms_uri, _ha_flags(args, url_on)) for n in ("on_a", "on_b")]
    off[0].start().wait(READY)
    on[0].start().wait(READY)
    on[1].start().wait(STANDBY)
    samples: dict[str, dict[str, list[float]]] = {
        mode: {"refresh": [], "propagation": []} for mode in ("off", "on")
    }
    subs = {
        "off": CatalogSubscriber(off[0].endpoint),
        "on": CatalogSubscriber([on[0].endpoint, on[1].endpoint]),
    }
    try:
        for sub in subs.values():
            sub.start()
            sub.wait_synced(60)
        clients = {"off": AdminClient(off[0].admin), "on": AdminClient(on[0].admin)}
        rounds = 10
        per_round = max(1, args.changes // rounds)
        for r in range(rounds):
            for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
                client, sub = clients[mode], subs[mode]
                for i in range(per_round):
                    started = time.perf_counter()
                    client.call(Cmd.REFRESH, db_name=DB, tbl_name=f"t{i % args.tables}")
                    samples[mode]["refresh"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    answer = client.call(Cmd.CACHE_POOL_ADD, options={"pool": f"p{r}_{i}"})
                    sub.wait_for_version(answer.version, 30)
                    samples[mode]["propagation"].append(time.perf_counter() - started)
    finally:
        for sub in subs.values():
            sub.close()
        for node in (*off, *on):
            node.stop()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 failovers, 100 changes")
    parser.add_argument("--failovers", type=int, default=20)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--changes", type=int, default=200, help="per mode, HA off and on")
    parser.add_argument("--tables", type=int, default=5)
    parser.add_argument("--lease", type=float, default=1.5, help="ha.lease_s")
    parser.add_argument("--renew", type=float, default=1.0, help="ha.renew_interval_s")
    parser.add_argument("--heartbeat", type=float, default=0.5, help="server heartbeat (s)")
    parser.add_argument("--data-dir", type=Path, default=None, help="unused (run_all passes it)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.failovers, args.changes = 5, 100
    print(f"failover benchmark; {cpu_note()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="catalogd-failover-") as tmp:
        work = Path(tmp)
        with EmbeddedMetastore(work / "hms", die_with_parent=True) as hms:
            _prepare_hms(hms, args.tables)
            with state_database() as url:
                times = failovers(args, work, hms.uri, url)
            with state_database() as url_off, state_database() as url_on:
                samples = steady_state(args, work, hms.uri, url_off, url_on)
    bound = args.lease + args.renew
    results = [
        Result(
            f"failover p50 ({args.subscribers} subscribers synced on the new active)",
            statistics.median(times),
            "s",
            3.0,
            note=f"lease {args.lease:g} s, renew {args.renew:g} s, heartbeat {args.heartbeat:g} s",
        ),
        Result(
            f"failover max of {len(times)}",
            max(times),
            "s",
            3.0,
            note=f"bound lease + renew + takeover + snapshot = {bound:g} s + takeover + snapshot",
        ),
    ]
    for measure, label in (("refresh", "admin refresh"), ("propagation", "propagation")):
        for q in (50, 99):
            base = percentile(samples["off"][measure], q)
            with_ha = percentile(samples["on"][measure], q)
            results.append(
                Result(
                    f"{label} p{q}: HA on / off",
                    with_ha / base if base > 0 else float("inf"),
                    "x",
                    1.10,
                    note=f"on {with_ha * 1000:.1f} ms, off {base * 1000:.1f} ms",
                )
            )
    return finish("HA failover and steady-state cost", results, args)


if __name__ == "__main__":
    sys.exit(main())
