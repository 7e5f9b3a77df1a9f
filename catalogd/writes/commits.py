"""Submissions to the server thread: catalog reads, and writes as a plan plus a guard.

A :class:`Write` is a value: a pure ``plan`` (a :mod:`catalogd.core.plans` function of
the catalog that returns the changes), an optional :class:`Guard` (commit only if a
table's epoch is still the one noted before HMS was read) and the tables the write
``touches`` (their epochs move on). :func:`run` is the only code that executes a
write, on the server thread and in one turn: check the guard against the server
thread's :class:`~catalogd.writes.epochs.TableEpochs`, move the epochs, plan, commit.
A write whose guard fails commits nothing and answers :class:`Overtaken` with the
table's state now, so the writer can decide what to do next without asking again.

:class:`Committer` is the channel the rest of :mod:`catalogd.writes` uses: each of
its calls is exactly one submission (:meth:`CatalogServer.submit
<catalogd.server.thread.CatalogServer.submit>`), answered once the delta is published.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from catalogd.core import plans
from catalogd.core.catalog import Catalog
from catalogd.server.thread import CatalogServer
from catalogd.writes.epochs import Table, TableEpochs
from subscriber.protocol.delta import Delta

Plan = Callable[[Catalog], plans.Changes]
T = TypeVar("T")

PLACEHOLDER, LOADED, ABSENT = "placeholder", "loaded", "absent"


@dataclass(frozen=True)
class Guard:
    """Commit only while ``table``'s epoch is ``epoch`` (then it moves on by one)."""

    table: Table
    epoch: int


@dataclass(frozen=True)
class Write:
    """One commit: ``plan`` run on the catalog, if ``guard`` (when given) holds;
    ``touches`` (of the catalog before the commit) names tables whose epochs move."""

    plan: Plan
    guard: Guard | None = None
    touches: Callable[[Catalog], Iterable[Table]] | None = None


@dataclass(frozen=True)
class Note:
    """A table as one submission saw it.

    ``presence`` is :data:`PLACEHOLDER`, :data:`LOADED` or :data:`ABSENT` (the
    catalog lacks it); ``version`` the catalog's version then; ``epoch`` the
    table's epoch then.
    """

    presence: str
    version: int
    epoch: int


@dataclass(frozen=True)
class Overtaken:
    """A guarded write that committed nothing: another write moved the table's epoch."""

    now: Note


def note(catalog: Catalog, epochs: TableEpochs, table: Table) -> Note:
    """Server thread: ``table``'s presence, the version and its epoch."""
    db, name = table
    if not catalog.table_keys(db, name):
        presence = ABSENT
    else:
        presence = PLACEHOLDER if plans.is_placeholder(catalog, db, name) else LOADED
    return Note(presence, catalog.version, epochs.current(table))


def run(write: Write, catalog: Catalog, epochs: TableEpochs) -> Delta | Overtaken:
    """Server thread: execute ``write`` (see the module docstring).

    The epochs move before the plan runs: a plan that raises (a partition named
    nowhere, a table to invalidate that nobody has) still counts as a write.
    """
    if write.guard is not None and not epochs.advance_if(write.guard.table, write.guard.epoch):
        return Overtaken(note(catalog, epochs, write.guard.table))
    if write.touches is not None:
        epochs.bump(write.touches(catalog))
    return catalog.commit(write.plan(catalog))


class Committer:
    """The write path's channel to the server thread; each call is one submission.

    Owns the :class:`TableEpochs`, which only :func:`run` changes (on the server
    thread). Thread-safe.

    Args:
        server: the server that owns the catalog (before it starts, submissions run
            in the calling thread).
    """

    def __init__(self, server: CatalogServer) -> None:
        self._server = server
        self._epochs = TableEpochs()

    def read(self, fn: Callable[[Catalog], T]) -> T:
        """``fn(catalog)`` on the server thread; ``fn`` must only read."""
        return self._server.submit(fn).result()

    def epoch(self, table: Table) -> int:
        """``table``'s epoch now (a racy read: guards check again)."""
        return self._epochs.current(table)

    def note(self, table: Table) -> Note:
        """``table``'s presence, the version and its epoch, read together."""
        return self.read(functools.partial(note, epochs=self._epochs, table=table))

    def notes(self, tables: Iterable[Table]) -> dict[Table, Note]:
        """:meth:`note` of several tables in one submission."""
        wanted = list(tables)
        return self.read(lambda c: {t: note(c, self._epochs, t) for t in wanted})

    def commit(
        self, plan: Plan, *, touches: Callable[[Catalog], Iterable[Table]] | None = None
    ) -> int:
        """Plan and commit unguarded; returns the published version."""
        delta = self._submit(Write(plan, touches=touches))
        assert isinstance(delta, Delta)  # only a guard can answer Overtaken
        return delta.to_version

    def commit_if(self, guard: Guard, plan: Plan) -> int | Overtaken:
        """Plan and commit if ``guard`` holds: the published version, or
        :class:`Overtaken` (nothing committed: read HMS again)."""
        result = self._submit(Write(plan, guard=guard))
        return result if isinstance(result, Overtaken) else result.to_version

    def _submit(self, write: Write) -> Delta | Overtaken:
        result: Delta | Overtaken = self._server.submit(
            functools.partial(run, write, epochs=self._epochs)
        ).result()
        return result
