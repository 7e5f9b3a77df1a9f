"""HMS's row order of a database's tables in its DATABASE object (catalogd/core/table_orders.py).

Which databases can be ordered (every table loaded, 2 to MAX_TABLES of them), which
need learning, what a learnt order commits (nothing when a table changed meanwhile),
and that a reload of the database object keeps the order it carries (free when
unchanged). Pure: a Catalog and encoded objects.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import idl
from catalogd.conversion import objects as convert
from catalogd.core import plans, table_orders
from catalogd.core.catalog import Catalog
from subscriber.protocol import codec
from subscriber.protocol.keys import database_key, function_key, table_key

hms = idl.hive_metastore


def _db_payload(name: str = "d", description: str = "") -> bytes:
    database = hms.Database(name=name, description=description, locationUri="file:/w")
    return codec.encode_object(convert.database_object(database))


def _catalog(
    *tables: str, placeholders: tuple[str, ...] = (), views: tuple[str, ...] = ()
) -> Catalog:
    catalog = Catalog()
    changes: dict[str, bytes | None] = {database_key("d"): _db_payload()}
    changes[function_key("d", "f", "()")] = b"function"
    for name in tables:
        changes[table_key("d", name)] = f"loaded {name}".encode()
    for name in views:
        changes[table_key("d", name, view=True)] = f"view {name}".encode()
    for name in placeholders:
        changes[table_key("d", name)] = plans.placeholder("d", name)
    catalog.commit(changes)
    return catalog


def _versions(catalog: Catalog, *names: str) -> dict[str, int]:
    result = {}
    for name in names:
        entry = catalog.get(table_key("d", name)) or catalog.get(table_key("d", name, view=True))
        assert entry is not None
        result[name] = entry.version
    return result


def test_a_database_of_loaded_tables_and_views_is_a_candidate() -> None:
    catalog = _catalog("b", "a", views=("v",))
    (found,) = table_orders.candidates(catalog, 0, {}).found
    assert found.db == "d"
    assert found.tables == _versions(catalog, "a", "b", "v")
    assert found.payload == catalog.get(database_key("d")).payload
    assert table_orders.needs_learning(found)


@pytest.mark.parametrize(
    ("tables", "placeholders", "max_tables"),
    [
        (("a",), (), 10),  # one table: no order to learn
        ((), (), 10),
        (("a", "b"), ("c",), 10),  # a table not loaded yet
        (("a", "b", "c"), (), 2),  # more than max_tables
    ],
)
def test_databases_without_an_order_to_learn(
    tables: tuple[str, ...], placeholders: tuple[str, ...], max_tables: int
) -> None:
    catalog = _catalog(*tables, placeholders=placeholders)
    assert table_orders.fingerprint(catalog, "d", max_tables) is None
    assert table_orders.candidates(catalog, 0, {}, max_tables).found == []


def test_only_databases_changed_since_are_candidates() -> None:
    catalog = _catalog("a", "b")
    version = catalog.version
    assert table_orders.candidates(catalog, version, {}).found == []
    catalog.commit({table_key("d", "a"): b"loaded a again"})
    assert [c.db for c in table_orders.candidates(catalog, version, {}).found] == ["d"]


def test_a_database_already_looked_at_is_skipped_until_it_changes() -> None:
    catalog = _catalog("a", "b")
    scan = table_orders.candidates(catalog, 0, {})
    assert scan.complete and scan.examined == {"d": catalog.changed_version_of("d")}
    again = table_orders.candidates(catalog, 0, scan.examined)
    assert again.found == [] and again.examined == {} and again.complete
    catalog.commit({table_key("d", "a"): b"loaded a again"})
    assert [c.db for c in table_orders.candidates(catalog, 0, scan.examined).found] == ["d"]


def test_one_call_looks_at_a_bounded_number_of_keys() -> None:
    catalog = Catalog()
    for db in ("d1", "d2", "d3"):
        changes: dict[str, bytes | None] = {database_key(db): _db_payload(db)}
        changes.update({table_key(db, f"t{i}"): b"loaded" for i in range(10)})
        catalog.commit(changes)
    first = table_orders.candidates(catalog, 0, {}, budget=15)  # 11 heads per database
    assert not first.complete
    assert [c.db for c in first.found] == ["d3", "d2"]  # newest change first
    rest = table_orders.candidates(catalog, 0, first.examined, budget=15)
    assert rest.complete and [c.db for c in rest.found] == ["d1"]


def test_a_learnt_order_is_published_and_then_needs_no_learning() -> None:
    catalog = _catalog("a", "b", "c")
    (found,) = table_orders.candidates(catalog, 0, {}).found
    changes = table_orders.plan(catalog, "d", ["c", "a", "b"], found.tables)
    catalog.commit(changes)
    payload = catalog.get(database_key("d")).payload
    assert table_orders.order_of(payload) == [(n, found.tables[n]) for n in ("c", "a", "b")]
    # The database object changed (its own commit): a candidate, but learnt already.
    (again,) = table_orders.candidates(catalog, 0, {}).found
    assert not table_orders.needs_learning(again)
    # Everything else in the database object is as it was.
    assert (
        codec.decode_object(payload).db.metastore_db
        == codec.decode_object(_db_payload()).db.metastore_db
    )


def test_an_order_read_while_a_table_changed_commits_nothing() -> None:
    catalog = _catalog("a", "b")
    (found,) = table_orders.candidates(catalog, 0, {}).found
    catalog.commit({table_key("d", "b"): b"loaded b, altered"})
    assert table_orders.plan(catalog, "d", ["b", "a"], found.tables) == {}
    catalog.commit({table_key("d", "z"): b"loaded z"})  # and a table more
    (now,) = table_orders.candidates(catalog, 0, {}).found
    assert table_orders.needs_learning(now)


def test_an_order_of_other_tables_is_refused() -> None:
    catalog = _catalog("a", "b")
    (found,) = table_orders.candidates(catalog, 0, {}).found
    with pytest.raises(ValueError, match="other tables"):
        table_orders.plan(catalog, "d", ["a", "x"], found.tables)


def test_a_gone_database_commits_nothing() -> None:
    catalog = _catalog("a", "b")
    (found,) = table_orders.candidates(catalog, 0, {}).found
    catalog.commit(plans.remove_database(catalog, "d"))
    assert table_orders.plan(catalog, "d", ["b", "a"], found.tables) == {}


def test_a_reload_of_the_database_keeps_its_order() -> None:
    catalog = _catalog("a", "b")
    (found,) = table_orders.candidates(catalog, 0, {}).found
    catalog.commit(table_orders.plan(catalog, "d", ["b", "a"], found.tables))
    version = catalog.version
    # Unchanged in HMS: the reload is free (no version, nothing to learn again).
    unchanged = table_orders.keep_order(catalog, {database_key("d"): _db_payload()})
    assert catalog.commit(unchanged).to_version == version
    # Changed in HMS: the new object, still with the order (whose versions decide).
    changed = table_orders.keep_order(catalog, {database_key("d"): _db_payload(description="x")})
    catalog.commit(changed)
    payload = catalog.get(database_key("d")).payload
    assert table_orders.order_of(payload) == [("b", found.tables["b"]), ("a", found.tables["a"])]
    assert codec.decode_object(payload).db.metastore_db.description == "x"
    # Removals and other keys pass through as they are.
    other = {table_key("d", "a"): None, table_key("d", "c"): b"loaded c"}
    assert table_orders.keep_order(catalog, other) == other


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.sampled_from("abcdefgh"), min_size=2, max_size=8, unique=True),
    changed=st.sets(st.sampled_from("abcdefgh")),
    seed=st.randoms(use_true_random=False),
)
def test_an_order_is_served_only_for_the_tables_it_was_learnt_for(
    names: list[str], changed: set[str], seed: object
) -> None:
    """Model: after any changes the carried order's versions equal the tables' exactly
    when no ordered table changed and none came or went."""
    catalog = _catalog(*names)
    (found,) = table_orders.candidates(catalog, 0, {}).found
    order = list(names)
    seed.shuffle(order)  # type: ignore[attr-defined]
    catalog.commit(table_orders.plan(catalog, "d", order, found.tables))
    catalog.commit({table_key("d", n): f"loaded {n} v2".encode() for n in changed})
    now = table_orders.fingerprint(catalog, "d")
    carried = table_orders.order_of(catalog.get(database_key("d")).payload)
    assert carried is not None and [n for n, _ in carried] == order
    assert (dict(carried) == now) == (not changed)
