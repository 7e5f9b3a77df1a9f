"""Each Hive Metastore version side by side: HMS 2.3.10, 3.1.3 and 4.0.1, in one run.

::

    .venv/bin/python bench/hms_versions_bench.py [--tables 20] [--partitions 500]
        [--calls 300] [--loads 3] [--changes 5] [--spark-repeats 5] [--versions 2.3,3.1,4.x]

For each version an embedded HMS of that version runs on a fresh PostgreSQL
database (needs the PostgreSQL of ``.ci/start-services``) with its notification
listener (2.3: catalogd's; 3.1: the stock ``DbNotificationListener``; 4.0.1:
none, so catalogd polls). One catalog is written over Thrift: ``--tables`` tables
of ``--partitions`` partitions each (keys ``dt``, ``n``), and then, per version:

* **full load, Thrift vs SQL**: ``load_catalog`` through HMS Thrift (the request-style
  calls on 4.x) and through the backing database (``--hms-db``), median of
  ``--loads`` each, interleaved; target: SQL no slower (>= 1x);
* **``get_table`` and a pruned partition read, direct vs through the endpoint**: the
  call each version's clients make (``get_table``, or ``get_table_req`` on 4.x; the
  pruned plan's ``get_partitions_by_filter(dt = X)``, ``get_partitions_by_filter_req``
  on 4.x) from one thriftpy2 client, median of ``--calls`` after a warm-up, straight
  at HMS and at a subscriber's endpoint (catalog committed into an in-process
  catalogd); target: the endpoint no slower (>= 1x). The Spark statements themselves
  (one client version per run) are ``bench/hms_endpoint_bench.py``;
* **Spark with the matching metastore client** (``--spark-repeats``, 0 skips it): a
  PySpark session straight at HMS and one through the endpoint, each with the client of
  that version (2.3: Spark's built-in one; 3.1.3 and 4.0.1: the Maven Central jars of
  ``make spark-clients``), time ``spark.catalog.getTable`` and the ``EXPLAIN`` of a
  pruned ``SELECT`` (Spark's own timing, median of the repeats after a warm-up);
  target: the endpoint no slower;
* **change -> subscriber**: a ``catalogd serve`` process (``--change-detection auto``,
  ``--poll-interval 0.5``) over that HMS and a subscriber; each of ``--changes``
  writes (``create_table`` + ``add_partitions``) is timed until the subscriber lists
  the table with its partitions; median (informational: events on 2.3 and 3.1,
  polling on 4.x).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.measure import Result, add_output_argument, cpu_note, finish
from support.tests_support import load

import idl
from catalogd.conversion import objects as convert
from catalogd.hms.builders import thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from catalogd.sources.sql import SqlSource
from subscriber.api import CatalogSubscriber

hms = idl.hive_metastore
Timed = tuple[str, float, float]
DB = "vb"


def _write_catalog(uri: str, warehouse: str, tables: int, partitions: int) -> None:
    with MetastoreClient(uri, timeout_s=300) as client:
        raw = client.raw
        raw.create_database(
            hms.Database(name=DB, locationUri=f"{warehouse}/{DB}.db", parameters={})
        )
        values = [
            [f"2024-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}", str(i)] for i in range(partitions)
        ]
        for t in range(tables):
            table = thrift_table(
                DB, f"t{t}", f"{warehouse}/{DB}.db/t{t}",
                columns=[("id", "bigint"), ("v", "string")],
                partition_keys=[("dt", "string"), ("n", "int")],
            )  # fmt: skip
            raw.create_table(table)
            for start in range(0, partitions, 500):
                raw.add_partitions(thrift_partitions(table, values[start : start + 500]))


def _calls(version: str, target: str, dt: str) -> dict[str, Any]:
    """The reads each version's clients make, as zero-argument callables on ``target``."""
    client = MetastoreClient(target, timeout_s=60)
    raw = client.raw
    if version == "4.x":
        # As a Hive 4 client sends them: catalog named (HMS 4.0.1 needs it for the filter).
        table_request = hms.GetTableRequest(dbName=DB, tblName="t0", catName="hive")
        filter_request = hms.GetPartitionsByFilterRequest(
            catName="hive", dbName=DB, tblName="t0", filter=f"dt = '{dt}'", maxParts=-1
        )
        return {
            "client": client,
            "get_table_req": lambda: raw.get_table_req(table_request),
            "get_partitions_by_filter_req (pruned)": lambda: raw.get_partitions_by_filter_req(
                filter_request
            ),
        }
    return {
        "client": client,
        "get_table": lambda: raw.get_table(DB, "t0"),
        "get_partitions_by_filter (pruned)": lambda: raw.get_partitions_by_filter(
            DB, "t0", f"dt = '{dt}'", -1
        ),
    }


def _median_us(call: Any, count: int) -> float:
    for _ in range(20):
        call()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def _loads(uri: str, url: str, runs: int) -> tuple[float, float, int]:
    thrift_s, sql_s = [], []
    partitions = 0
    for _ in range(runs):
        with MetastoreClient(uri, timeout_s=300) as client:
            started = time.perf_counter()
            _, stats = load_catalog(ThriftSource(client))
            thrift_s.append(time.perf_counter() - started)
            partitions = stats.partitions
        source = SqlSource(url)
        try:
            started = time.perf_counter()
            load_catalog(source)
            sql_s.append(time.perf_counter() - started)
        finally:
            source.close()
    return statistics.median(thrift_s), statistics.median(sql_s), partitions


@contextmanager
def _served(uri: str) -> Iterator[tuple[Any, str]]:
    """The catalog read from HMS once, committed into an in-process catalogd, and a
    subscriber's endpoint over it (upstream: HMS); with a ``dt`` of ``t0`` to prune by."""
    with MetastoreClient(uri, timeout_s=300) as client:
        objects, _ = load_catalog(ThriftSource(client))
        dt = client.get_partition_names(DB, "t0")[0].split("/")[0].split("=")[1]
    server = CatalogServer(ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*"))
    server.commit(convert.encode_all(objects)).result()
    del objects
    with server, CatalogSubscriber(server.endpoint) as sub:
        sub.wait_synced(300)
        with sub.metastore_endpoint(upstream=uri) as endpoint:
            yield endpoint, dt


def _reads(version: str, uri: str, endpoint: Any, dt: str, calls: int) -> list[Timed]:
    """(call, direct us, endpoint us) of each version's own reads."""
    rows = []
    direct, via = _calls(version, uri, dt), _calls(version, endpoint.uri, dt)
    try:
        for name in direct:
            if name != "client":
                rows.append((name, _median_us(direct[name], calls), _median_us(via[name], calls)))
    finally:
        direct["client"].close()
        via["client"].close()
    return rows


SPARK_CLIENTS = {"2.3": None, "3.1": "3.1.3", "4.x": "4.0.1"}


def _spark(version: str, uri: str, endpoint: Any, dt: str, repeats: int, work: Path) -> list[Timed]:
    """(statement, direct s, endpoint s): Spark with ``version``'s metastore client."""
    spark_mod, clients = load("spark_sql_server"), load("spark_clients")
    client = SPARK_CLIENTS[version]
    conf = {} if client is None else clients.hive_client_conf(client)
    statements = {
        "getTable": f"@getTable {DB}.t0",
        "plan pruned SELECT": f"EXPLAIN SELECT count(*) FROM {DB}.t0 WHERE dt = '{dt}'",
    }
    timings: dict[str, dict[str, float]] = {}
    for mode, target in (("direct", uri), ("endpoint", endpoint.uri)):
        spark = spark_mod.SparkSql(target, work / "wh", work / f"spark-{mode}", conf)
        try:
            for statement in statements.values():
                spark.query(statement, timeout=600)  # warm-up
            samples: dict[str, list[float]] = {name: [] for name in statements}
            for _ in range(repeats):
                for name, statement in statements.items():
                    samples[name].append(spark.query(statement, timeout=600)[0])
            timings[mode] = {n: statistics.median(v) for n, v in samples.items()}
        finally:
            spark.close()
    return [(n, timings["direct"][n], timings["endpoint"][n]) for n in statements]


def _speedup(measure: str, direct: float, via: float, unit: str, scale: float) -> Result:
    """The direct / endpoint ratio (target: the endpoint no slower) of two timings."""
    note = f"direct {direct * scale:.0f} {unit}, endpoint {via * scale:.0f} {unit}"
    return Result(f"{measure}: direct / endpoint", direct / via, "x", 1.0, goal="min", note=note)


def _change_latency(uri: str, warehouse: str, work: Path, changes: int) -> float:
    process = (
        load("catalogd_process")
        .CatalogdProcess(uri, work / "catalogd", extra=["--poll-interval", "0.5"])
        .start(timeout=300)
    )
    samples = []
    try:
        process.wait_loaded()
        with CatalogSubscriber(process.endpoint) as sub, MetastoreClient(uri) as client:
            sub.wait_synced(120)
            for i in range(changes):
                table = thrift_table(
                    DB, f"later{i}", f"{warehouse}/later{i}", columns=[("x", "int")],
                    partition_keys=[("p", "string")],
                )  # fmt: skip
                started = time.monotonic()
                client.raw.create_table(table)
                client.raw.add_partitions(thrift_partitions(table, [["a"], ["b"]]))
                deadline = started + 60
                while time.monotonic() < deadline:
                    if (
                        f"later{i}" in sub.list_tables(DB)
                        and len(sub.list_partitions(f"{DB}.later{i}")) == 2
                    ):
                        break
                    time.sleep(0.005)
                else:
                    raise RuntimeError(f"later{i} not seen within 60 s")
                samples.append(time.monotonic() - started)
    finally:
        process.stop()
    return statistics.median(samples)


def run_version(version: str, args: argparse.Namespace, work: Path) -> list[Result]:
    versions_mod = load("hms_versions")
    backend = versions_mod.backend_for("postgres")
    results: list[Result] = []
    try:
        root = work / f"hms-{version}"
        with EmbeddedMetastore(
            root, version=version, backend=backend, notification_events=True
        ) as metastore:
            warehouse = f"file:{metastore.warehouse_dir}"
            started = time.perf_counter()
            _write_catalog(metastore.uri, warehouse, args.tables, args.partitions)
            written = time.perf_counter() - started
            print(f"  {version}: catalog written in {written:.0f} s; {cpu_note()}")
            thrift_s, sql_s, parts = _loads(metastore.uri, backend.sqlalchemy_url, args.loads)
            results.append(
                Result(
                    f"HMS {version}: full load, {parts:,} partitions: Thrift / SQL time",
                    thrift_s / sql_s, "x", 1.0, goal="min",
                    note=f"Thrift {thrift_s:.2f} s, SQL {sql_s:.2f} s (median of {args.loads})",
                )
            )  # fmt: skip
            with _served(metastore.uri) as (endpoint, dt):
                for name, direct_us, via_us in _reads(
                    version, metastore.uri, endpoint, dt, args.calls
                ):
                    results.append(_speedup(f"HMS {version}: {name}", direct_us, via_us, "us", 1))
                if args.spark_repeats:
                    client = SPARK_CLIENTS[version] or "built-in 2.3.10"
                    for name, direct_s, via_s in _spark(
                        version, metastore.uri, endpoint, dt, args.spark_repeats, root / "spark"
                    ):
                        measure = f"HMS {version}: Spark ({client} client) {name}"
                        results.append(_speedup(measure, direct_s, via_s, "ms", 1e3))
                print(f"  {version} endpoint calls: {endpoint.stats.summary()}")
            if args.changes:
                latency = _change_latency(metastore.uri, warehouse, root, args.changes)
                how = "polling" if version == "4.x" else "events"
                results.append(
                    Result(
                        f"HMS {version}: table + partitions written -> subscriber ({how})",
                        latency * 1e3, "ms", None,
                        note=f"median of {args.changes}",
                    )
                )  # fmt: skip
    finally:
        versions_mod.drop(backend)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default="2.3,3.1,4.x", help="comma-separated")
    parser.add_argument("--tables", type=int, default=20, help="partitioned tables")
    parser.add_argument("--partitions", type=int, default=500, help="partitions per table")
    parser.add_argument("--loads", type=int, default=3, help="full loads each way")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per read")
    parser.add_argument("--changes", type=int, default=5, help="timed writes (0: skip)")
    parser.add_argument(
        "--spark-repeats", type=int, default=5, help="timed runs per Spark statement (0: skip)"
    )
    add_output_argument(parser)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="catalogd-hms-versions-bench-"))
    print(f"HMS versions: {args.tables} tables x {args.partitions} partitions; {cpu_note()}")
    results: list[Result] = []
    for version in args.versions.split(","):
        results += run_version(version.strip(), args, work)
    return finish("Each HMS version: loads, reads through the endpoint, changes", results, args)


if __name__ == "__main__":
    raise SystemExit(main())
