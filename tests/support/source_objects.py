"""Every catalog object a metastore source yields, encoded: what the SQL-source tests
compare, byte for byte, with the Thrift source's."""

from __future__ import annotations

from catalogd.conversion import objects as convert
from catalogd.conversion.grants import grant_holders, load_privileges, owners_of
from catalogd.sources import MetastoreSource, load_catalog


def everything(source: MetastoreSource) -> dict[str, bytes]:
    """Every catalog object (databases, tables, partitions, principals, privileges)."""
    objects, _ = load_catalog(source)
    refs: list[tuple[str, str | None]] = []
    for db in source.database_names():
        refs.append((db, None))
        refs.extend((db, t) for t in source.table_names(db))
    holders = owners_of(objects.values()) | grant_holders(source, refs)
    objects.update(load_privileges(source, principals=sorted(holders)))
    return convert.encode_all(objects)
