"""Writes as values (catalogd.writes.commits): the guard against the server thread's
table epochs, the tables a write touches, and what an overtaken write answers."""

from __future__ import annotations

import pytest

from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.writes.commits import ABSENT, LOADED, PLACEHOLDER, Guard, Overtaken, Write, run
from catalogd.writes.epochs import TableEpochs
from subscriber.protocol.delta import Delta
from subscriber.protocol.errors import NotFoundError
from subscriber.protocol.keys import table_key

T = ("db", "t")


def placeholder_write(catalog: Catalog) -> plans.Changes:
    return {table_key("db", "t"): plans.placeholder("db", "t")}


def test_a_guarded_write_commits_once_per_epoch() -> None:
    catalog, epochs = Catalog(), TableEpochs()
    first = run(Write(placeholder_write, guard=Guard(T, 0)), catalog, epochs)
    assert isinstance(first, Delta) and epochs.current(T) == 1
    again = run(Write(placeholder_write, guard=Guard(T, 0)), catalog, epochs)
    assert isinstance(again, Overtaken) and again.now.epoch == 1
    assert again.now.presence == PLACEHOLDER and again.now.version == catalog.version


def test_an_overtaken_write_reports_a_loaded_or_absent_table() -> None:
    catalog, epochs = Catalog(), TableEpochs()
    epochs.bump([T])
    absent = run(Write(placeholder_write, guard=Guard(T, 0)), catalog, epochs)
    assert isinstance(absent, Overtaken) and absent.now.presence == ABSENT
    catalog.commit({table_key("db", "t"): b"not a placeholder"})
    loaded = run(Write(placeholder_write, guard=Guard(T, 0)), catalog, epochs)
    assert isinstance(loaded, Overtaken) and loaded.now.presence == LOADED
    entry = catalog.get(table_key("db", "t"))
    assert entry is not None and entry.payload == b"not a placeholder"


def test_touched_tables_move_on_even_when_the_plan_raises() -> None:
    catalog, epochs = Catalog(), TableEpochs()

    def refuse(catalog: Catalog) -> plans.Changes:
        raise NotFoundError("nobody has it")

    with pytest.raises(NotFoundError):
        run(Write(refuse, touches=lambda _: [T, ("db", "u")]), catalog, epochs)
    assert epochs.current(T) == epochs.current(("db", "u")) == 1
    assert epochs.current(("db", "other")) == 0 and catalog.version == 0
