"""What loading HMS 3.1 constraints with each table would cost catalogd's table load.

::

    .venv/bin/python bench/constraint_cost_bench.py [--tables 300] [--rounds 3]

Starts an embedded HMS 3.1.3 (Derby; fetched into ``~/.cache/catalogd``), creates
``--tables`` unpartitioned tables, then times, per round: ``load_catalog`` over Thrift
(catalogd's load: tables fetched 100 per ``get_table_objects_by_name``) and the calls
HMS 3.1 needs to learn every table's constraints (``get_primary_keys``,
``get_foreign_keys``, ``get_unique_constraints``, ``get_not_null_constraints``: one
call each per table; HMS 3.1 has no call for several tables or every constraint kind).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import idl
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.hms.embedded import EmbeddedMetastore
from catalogd.sources import ThriftSource, load_catalog

hms = idl.hive_metastore
DB = "cbench"


def constraint_calls(raw: Any, names: list[str]) -> None:
    for name in names:
        raw.get_primary_keys(hms.PrimaryKeysRequest(db_name=DB, tbl_name=name))
        raw.get_foreign_keys(hms.ForeignKeysRequest(foreign_db_name=DB, foreign_tbl_name=name))
        raw.get_unique_constraints(
            hms.UniqueConstraintsRequest(catName="hive", db_name=DB, tbl_name=name)
        )
        raw.get_not_null_constraints(
            hms.NotNullConstraintsRequest(catName="hive", db_name=DB, tbl_name=name)
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="constraint-bench-"))
    with (
        EmbeddedMetastore(root / "hms", version="3.1", cache_dir=root / "cache") as metastore,
        MetastoreClient(metastore.uri, timeout_s=300) as client,
    ):
        raw = client.raw
        raw.create_database(hms.Database(name=DB, description="", locationUri=f"file:{root}/w"))
        names = [f"t{i:05d}" for i in range(args.tables)]
        for name in names:
            raw.create_table(
                thrift_table(DB, name, f"file:{root}/w/{name}", columns=[("x", "int")])
            )
        loads, extras = [], []
        for n in range(args.rounds + 1):  # round 0 warms the HMS's JIT
            started = time.monotonic()
            load_catalog(ThriftSource(client))
            load_s = time.monotonic() - started
            started = time.monotonic()
            constraint_calls(raw, names)
            extra_s = time.monotonic() - started
            print(f"  round {n}: load {load_s:.3f} s, constraints {extra_s:.3f} s")
            if n:
                loads.append(load_s)
                extras.append(extra_s)
    load, extra = statistics.median(loads), statistics.median(extras)
    print(
        f"{args.tables} tables: load {load:.3f} s ({1000 * load / args.tables:.2f} ms/table), "
        f"constraints {extra:.3f} s ({1000 * extra / args.tables:.2f} ms/table, "
        f"{1000 * extra / args.tables / 4:.2f} ms/call): load x{(load + extra) / load:.1f}"
    )


if __name__ == "__main__":
    main()
