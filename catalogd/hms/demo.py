"""A small demo warehouse, created through HMS Thrift calls (no Spark needed).

``catalogd serve --demo`` uses it so one command on a fresh machine shows a
catalog with a database, a partitioned table, an unpartitioned table and a
view, and reading them shows rows: the tables are comma-separated text
(Hive's ``LazySimpleSerDe``), so their few data files are written here with
the standard library, no Parquet writer needed. Idempotent: existing objects
and files are left alone; missing data files are written again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import idl
from catalogd.hms.builders import FORMATS, thrift_partitions, thrift_table
from catalogd.hms.client import MetastoreClient
from subscriber.protocol.errors import CatalogError, NotFoundError

hms = idl.hive_metastore

DEMO_DB = "demo"
_EVENT_COLUMNS = [("id", "bigint"), ("kind", "string"), ("payload", "string")]
_DELIMITED = {"field.delim": ",", "serialization.format": ","}
DAYS = ("2026-11-20", "2026-11-21", "2026-11-22")
REGIONS = ("eu", "us")
_KINDS = ("click", "view", "purchase")
USERS = ((1, "ada"), (2, "grace"), (3, "edsger"))


def _table(name: str, cols: list[tuple[str, str]], keys: list[tuple[str, str]], base: str) -> Any:
    return thrift_table(
        DEMO_DB,
        name,
        f"{base}/{name}",
        columns=cols,
        partition_keys=keys,
        fmt="text",
        owner="catalogd",
        parameters={"EXTERNAL": "TRUE"},
        table_type="EXTERNAL_TABLE",
        serde_parameters=_DELIMITED,
    )


def _event_rows(day: str, region: str) -> str:
    """Four rows per partition, the same on every run (ids unique across partitions)."""
    start = (DAYS.index(day) * len(REGIONS) + REGIONS.index(region)) * 4
    return "".join(
        f"{i},{_KINDS[i % len(_KINDS)]},{region}-{day}-{i}\n" for i in range(start, start + 4)
    )


def write_demo_files(warehouse: str) -> int:
    """Write the demo tables' data files under a ``file:`` warehouse; returns files written.

    Files that exist are left alone; a warehouse that is not local is skipped (0).
    """
    url = urlparse(warehouse)
    if url.scheme not in ("", "file"):
        return 0
    base = Path(unquote(url.path)) / f"{DEMO_DB}.db"
    files = {
        base / "users" / "part-00000.csv": "".join(f"{i},{n}\n" for i, n in USERS),
    }
    for day in DAYS:
        for region in REGIONS:
            path = base / "events" / f"dt={day}" / f"region={region}" / "part-00000.csv"
            files[path] = _event_rows(day, region)
    written = 0
    for path, text in files.items():
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written += 1
    return written


def create_demo_warehouse(client: MetastoreClient, warehouse: str) -> bool:
    """Create the demo database, its objects and data files; False when it already existed.

    Data files missing from an existing demo warehouse are written again.
    """
    try:
        client.get_database(DEMO_DB)
        if _is_text(client):
            write_demo_files(warehouse)
        _repair_view(client)
        return False
    except NotFoundError:
        pass
    write_demo_files(warehouse)
    raw = client.raw
    base = f"{warehouse.rstrip('/')}/{DEMO_DB}.db"
    raw.create_database(
        hms.Database(name=DEMO_DB, description="catalogd demo", locationUri=base, parameters={})
    )
    events = _table("events", _EVENT_COLUMNS, [("dt", "string"), ("region", "string")], base)
    raw.create_table(events)
    raw.add_partitions(thrift_partitions(events, [[d, r] for d in DAYS for r in REGIONS]))
    raw.create_table(_table("users", [("id", "bigint"), ("name", "string")], [], base))
    view = _table("recent_events", [("id", "bigint"), ("kind", "string")], [], base)
    view.sd.location = None  # Hive leaves a view's unset: Spark fails on an empty path
    view.tableType = "VIRTUAL_VIEW"
    view.parameters = {}
    view.viewOriginalText = "SELECT id, kind FROM demo.events WHERE dt >= '2026-11-21'"
    view.viewExpandedText = (
        "SELECT `events`.`id`, `events`.`kind` FROM `demo`.`events` "
        "WHERE `events`.`dt` >= '2026-11-21'"
    )
    view.sd.inputFormat = view.sd.outputFormat = None
    view.sd.serdeInfo = hms.SerDeInfo(name="", serializationLib=None, parameters={})
    raw.create_table(view)
    return True


def _repair_view(client: MetastoreClient) -> None:
    """Unset the location of a view an older demo created with ``""`` (Spark refuses it)."""
    try:
        view = client.get_table(DEMO_DB, "recent_events")
    except CatalogError:
        return
    if view.sd is not None and view.sd.location == "":
        view.sd.location = None
        client.raw.alter_table(DEMO_DB, "recent_events", view)


def _is_text(client: MetastoreClient) -> bool:
    """Whether the existing demo table is the text one (older demos were Parquet, no files)."""
    try:
        table = client.get_table(DEMO_DB, "events")
    except CatalogError:
        return False
    return bool(table.sd and table.sd.inputFormat == FORMATS["text"][0])
