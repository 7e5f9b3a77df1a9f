"""A catalog for the HMS endpoint's differential test, raw Thrift calls, a generic decoder.

:func:`populate` writes (over Thrift) one database of odd names and values into an
HMS: typed partition keys (int, smallint, date, varchar, string), values with
``/``, ``=``, ``%``, non-ASCII and upper case, partitions added out of name order,
a view, functions in two databases added out of name order; :func:`grant` adds grants
on its objects (a role, a user and a group; none global) and :func:`revoke` takes them
back. :func:`raw_call`
sends one encoded call over a kept socket and returns the reply's bytes;
:func:`decode_reply` turns a reply into plain values (field ids, wire types,
values; maps as sorted pairs), so two replies compare equal exactly when they
carry the same fields, present or absent, with the same values.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Iterator
from typing import Any

import idl
from catalogd.conversion import objects as convert
from catalogd.hms.builders import thrift_table
from catalogd.hms.client import MetastoreClient
from catalogd.server.thread import CatalogServer, ServerConfig
from catalogd.sources import ThriftSource, load_catalog
from subscriber.api import CatalogSubscriber
from subscriber.metastore import MetastoreEndpoint, framing
from subscriber.protocol import codec
from subscriber.protocol.binary import (
    BOOL,
    BYTE,
    DOUBLE,
    I16,
    I32,
    I64,
    LIST,
    MAP,
    SET,
    STOP,
    STRING,
    STRUCT,
)
from subscriber.protocol.keys import make_partition_name

hms = idl.hive_metastore
SERVICE = hms.ThriftHiveMetastore
DB = "diff22"
OTHER_DB = "diff22b"

TYPED_KEYS = [
    ("i", "int"),
    ("s", "smallint"),
    ("d", "date"),
    ("v", "varchar(10)"),
    ("str", "string"),
]
# Out of name order on purpose: HMS's order is visible only then.
TYPED_VALUES = [
    ["3", "1", "2024-01-02", "b", "a/b"],
    ["10", "2", "2024-01-10", "A", "x=y"],
    ["-1", "3", "2023-12-31", "é", "50%"],
    ["2", "-5", "2024-01-02", "Z", "Ü"],
    ["3", "1", "2024-02-01", "a", "plain"],
    ["7", "7", "2024-01-05", "bb", "__HIVE_DEFAULT_PARTITION__"],
    ["3", "4", "2024-01-03", "b", "Plain"],
]
STR_KEYS = [("a", "string"), ("b", "string")]
STR_VALUES = [
    ["x", "2"],
    ["X", "1"],
    ["x", "1"],
    ["a b", "10"],
    ["é", "1"],
    ["x", "10"],
    ["%", "="],
]
# (db, name): created in this order.
FUNCTIONS = [(DB, "zeta"), (OTHER_DB, "mid"), (DB, "Alpha"), (DB, "beta")]


def populate(uri: str, warehouse: str) -> None:
    """Create the catalog (two databases) in the HMS at ``uri``; files are never written."""
    from catalogd.hms.client import MetastoreClient

    with MetastoreClient(uri) as client:
        raw = client.raw
        for db in (DB, OTHER_DB):
            raw.create_database(
                hms.Database(
                    name=db,
                    description="d",
                    locationUri=f"{warehouse}/{db}.db",
                    parameters={"k": "v"},
                )
            )
        tables = [
            thrift_table(
                DB,
                "typed",
                f"{warehouse}/typed",
                columns=[("c1", "string"), ("c2", "int")],
                partition_keys=TYPED_KEYS,
                parameters={"p": "1"},
            ),
            thrift_table(
                DB,
                "strs",
                f"{warehouse}/strs",
                columns=[("c", "string")],
                partition_keys=STR_KEYS,
                fmt="text",
            ),
            thrift_table(DB, "t22", f"{warehouse}/t22", columns=[("x", "bigint")]),
            thrift_table(
                DB,
                "empty",
                f"{warehouse}/empty",
                columns=[("x", "bigint")],
                partition_keys=[("p", "string")],
                fmt="orc",
            ),
            thrift_table(DB, "a_first", f"{warehouse}/a_first", columns=[("x", "bigint")]),
            thrift_table(OTHER_DB, "z", f"{warehouse}/z", columns=[("x", "bigint")]),
        ]
        view = thrift_table(DB, "v1", "", columns=[("x", "bigint")], table_type="VIRTUAL_VIEW")
        view.sd.location = None
        view.viewOriginalText = view.viewExpandedText = f"select x from {DB}.t22"
        tables.append(view)
        for table in tables:
            raw.create_table(table)
        for table, keys, rows in (
            (tables[0], TYPED_KEYS, TYPED_VALUES),
            (tables[1], STR_KEYS, STR_VALUES),
        ):
            for values in rows:  # one by one: PART_ID order is creation order
                name = make_partition_name([k for k, _ in keys], values)
                part = hms.Partition(
                    values=list(values),
                    dbName=table.dbName,
                    tableName=table.tableName,
                    createTime=1700000000,
                    lastAccessTime=0,
                    parameters={"n": name},
                    sd=_copy_sd(table.sd, f"{table.sd.location}/{name}"),
                )
                raw.add_partition(part)
        for db, name in FUNCTIONS:
            raw.create_function(
                hms.Function(
                    functionName=name,
                    dbName=db,
                    className=f"com.example.{name}",
                    ownerName="o",
                    ownerType=hms.PrincipalType.USER,
                    createTime=1700000000,
                    functionType=hms.FunctionType.JAVA,
                    resourceUris=[
                        hms.ResourceUri(resourceType=hms.ResourceType.JAR, uri="file:/x.jar")
                    ],
                )
            )


# Principals of the grants (unique to this test: the session HMS is shared).
GRANT_USER, GRANT_GROUP, GRANT_ROLE = "DiffUser", "diffgrp", "DiffRole"


def grant_bag() -> Any:
    """Grants on the catalog's objects that the catalog's conversion cannot keep exactly:
    names and privilege strings in mixed case, two grantors of two types, WITH GRANT
    OPTION, UPDATE (no Impala level), a partition and a column; none global."""
    user, group, role = hms.PrincipalType.USER, hms.PrincipalType.GROUP, hms.PrincipalType.ROLE
    kind = hms.HiveObjectType
    db = hms.HiveObjectRef(objectType=kind.DATABASE, dbName=DB)
    typed = hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="typed")
    t22 = hms.HiveObjectRef(objectType=kind.TABLE, dbName=DB, objectName="t22")
    column = hms.HiveObjectRef(
        objectType=kind.COLUMN, dbName=DB, objectName="typed", columnName="c1"
    )
    part = hms.HiveObjectRef(
        objectType=kind.PARTITION, dbName=DB, objectName="strs", partValues=["x", "2"]
    )
    rows = [
        (typed, GRANT_USER, user, "Select", "bob", role, True),
        (typed, GRANT_USER, user, "UPDATE", "admin", user, False),
        (db, GRANT_USER, user, "ALL", "admin", user, False),
        (column, GRANT_USER, user, "SELECT", "admin", user, False),
        (part, GRANT_USER, user, "INSERT", "admin", user, False),
        (typed, GRANT_ROLE, role, "select", "admin", user, False),
        (t22, GRANT_GROUP, group, "INSERT", "admin", user, True),
    ]
    return hms.PrivilegeBag(
        privileges=[
            hms.HiveObjectPrivilege(
                hiveObject=ref,
                principalName=name,
                principalType=ptype,
                grantInfo=hms.PrivilegeGrantInfo(
                    privilege=privilege,
                    createTime=0,
                    grantor=grantor,
                    grantorType=grantor_type,
                    grantOption=option,
                ),
            )
            for ref, name, ptype, privilege, grantor, grantor_type, option in rows
        ]
    )


def grant(uri: str) -> None:
    """Make the role, grant it to the user, and make :func:`grant_bag`'s grants."""
    from catalogd.hms.client import MetastoreClient

    user = hms.PrincipalType.USER
    with MetastoreClient(uri) as client:
        raw = client.raw
        raw.create_role(hms.Role(roleName=GRANT_ROLE, createTime=0, ownerName="admin"))
        raw.grant_role(GRANT_ROLE, GRANT_USER, user, "admin", user, False)
        raw.grant_privileges(grant_bag())


def revoke(uri: str) -> None:
    """Take :func:`grant`'s grants and role back (what is gone already is skipped)."""
    from thriftpy2.thrift import TException

    from catalogd.hms.client import MetastoreClient

    with MetastoreClient(uri) as client:
        for one in grant_bag().privileges:
            with contextlib.suppress(TException):
                client.raw.revoke_privileges(hms.PrivilegeBag(privileges=[one]))
        with contextlib.suppress(TException):
            client.raw.drop_role(GRANT_ROLE)


def _copy_sd(sd: Any, location: str) -> Any:
    copy = codec.decode(hms.StorageDescriptor, codec.encode(sd, check=False))
    copy.location = location
    return copy


class RawClient:
    """One socket to a Thrift HMS (or the endpoint); :meth:`call` returns reply bytes."""

    def __init__(self, uri: str) -> None:
        host, _, port = uri.removeprefix("thrift://").rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=30)
        self._seqid = 0

    def call(self, method: str, **kwargs: Any) -> bytes:
        self._seqid += 1
        args = getattr(SERVICE, f"{method}_args")(**kwargs)
        message = framing.header_bytes(method, framing.CALL, self._seqid) + codec.encode(
            args, check=False
        )
        self._sock.sendall(message)
        buf = bytearray()
        while (end := framing.message_end(buf)) is None:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError(f"{method}: connection closed before the reply")
            buf += chunk
        return bytes(buf[:end])

    def close(self) -> None:
        self._sock.close()


def decode_reply(reply: bytes) -> tuple[str, int, Any]:
    """``(method, message type, decoded result struct)`` of one reply."""
    header = framing.read_header(reply)
    assert header is not None
    value, end = _value(reply, header.body_start, STRUCT)
    assert end == len(reply), "trailing bytes after the reply"
    return header.name, header.type, value


_FIXED = {BOOL: ">?", BYTE: ">b", DOUBLE: ">d", I16: ">h", I32: ">i", I64: ">q"}


def _value(buf: bytes, pos: int, ttype: int) -> tuple[Any, int]:
    if ttype in _FIXED:
        fmt = _FIXED[ttype]
        return struct.unpack_from(fmt, buf, pos)[0], pos + struct.calcsize(fmt)
    if ttype == STRING:
        (size,) = struct.unpack_from(">i", buf, pos)
        raw = buf[pos + 4 : pos + 4 + size]
        try:
            return raw.decode(), pos + 4 + size
        except UnicodeDecodeError:
            return raw, pos + 4 + size
    if ttype == STRUCT:
        fields: dict[int, tuple[int, Any]] = {}
        while buf[pos] != STOP:
            ftype = buf[pos]
            (fid,) = struct.unpack_from(">h", buf, pos + 1)
            assert fid not in fields, f"field {fid} twice"
            fields[fid], pos = _typed(buf, pos + 3, ftype)
        return ("struct", tuple(sorted(fields.items()))), pos + 1
    if ttype in (LIST, SET):
        etype = buf[pos]
        (count,) = struct.unpack_from(">i", buf, pos + 1)
        pos += 5
        items = []
        for _ in range(count):
            item, pos = _value(buf, pos, etype)
            items.append(item)
        if ttype == SET:
            return ("set", etype, tuple(sorted(items, key=repr))), pos
        return ("list", etype, tuple(items)), pos
    if ttype == MAP:
        ktype, vtype = buf[pos], buf[pos + 1]
        (count,) = struct.unpack_from(">i", buf, pos + 2)
        pos += 6
        pairs = []
        for _ in range(count):
            key, pos = _value(buf, pos, ktype)
            val, pos = _value(buf, pos, vtype)
            pairs.append((key, val))
        # An empty map's key/value types are not compared: Java writes them, some do not.
        return ("map", (ktype, vtype) if count else None, tuple(sorted(pairs, key=repr))), pos
    raise ValueError(f"type code {ttype} at {pos}")


def _typed(buf: bytes, pos: int, ttype: int) -> tuple[tuple[int, Any], int]:
    value, pos = _value(buf, pos, ttype)
    return (ttype, value), pos


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two decoded values differ (paths of field ids), for failure messages."""
    if type(a) is not type(b) or not isinstance(a, tuple):
        return [] if a == b else [f"{path}: {a!r} != {b!r}"]
    if a and a[0] == "struct" and b and b[0] == "struct":
        fa, fb = dict(a[1]), dict(b[1])
        out = []
        for fid in sorted(fa.keys() | fb.keys()):
            if fid not in fa or fid not in fb:
                out.append(f"{path}.{fid}: present only in {'first' if fid in fa else 'second'}")
            elif fa[fid][0] != fb[fid][0]:
                out.append(f"{path}.{fid}: wire type {fa[fid][0]} != {fb[fid][0]}")
            else:
                out += differences(fa[fid][1], fb[fid][1], f"{path}.{fid}")
        return out
    if (
        a
        and a[0] == "list"
        and b
        and b[0] == "list"
        and len(a[2]) == len(b[2])
        and len(a[2]) > 0
        and isinstance(a[2][0], tuple)
    ):
        out = []
        for i, (x, y) in enumerate(zip(a[2], b[2], strict=True)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {_short(a)} != {_short(b)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."


def loaded(uri: str) -> dict[str, Any]:
    """The catalog objects by key that catalogd's Thrift source loads from ``uri``."""
    with MetastoreClient(uri) as client:
        objects, _ = load_catalog(ThriftSource(client))
    return objects


@contextlib.contextmanager
def endpoint_over(
    objects: dict[str, Any], upstream: str, *, max_lag_s: float = 60.0
) -> Iterator[tuple[CatalogServer, MetastoreEndpoint]]:
    """An in-process catalogd holding ``objects``, a subscriber synced to it, and that
    subscriber's HMS endpoint in front of ``upstream``."""
    server = CatalogServer(
        ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", heartbeat_interval_s=0.1
        )
    )
    server.commit(convert.encode_all(objects)).result()
    server.start()
    try:
        with CatalogSubscriber(server.endpoint) as sub:
            sub.wait_synced(30)
            with sub.metastore_endpoint(upstream=upstream, max_lag_s=max_lag_s) as endpoint:
                yield server, endpoint
    finally:
        server.close()
