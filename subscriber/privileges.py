"""Privilege checks over the catalog's PRINCIPAL and PRIVILEGE objects (pure).

catalogd loads roles, memberships and grants from the Hive Metastore
(:mod:`catalogd.conversion.grants`) and publishes them as ``TPrincipal`` and
``TPrivilege`` objects; a subscriber builds a :class:`PrivilegeIndex` from the
decoded objects and answers :func:`check_privilege` locally, the way Impala
coordinators answer from their authorization cache. No I/O, no clock.

Who holds what
--------------
A request by ``user`` in ``groups`` is granted what these principals hold:

* the USER principal named ``user`` (names of users and groups are
  case-sensitive, role names are not);
* the GROUP principals named in ``groups``;
* the role ``public`` (HMS grants it implicitly to everyone);
* every role whose ``grant_groups`` meets ``groups``, every role in the
  ``roles`` of the user's USER principal or of its GROUP principals, and,
  transitively, the roles in those roles' ``roles`` (HMS lets a role be granted
  to a role; its members then hold both).

What a grant covers
-------------------
========================  ==================================================
grant scope               covers a request on
========================  ==================================================
SERVER                    the server, every database, table and column
DATABASE ``d``            ``d``, every table of ``d`` and their columns
TABLE ``d.t``             ``d.t`` and each of its columns
COLUMN ``d.t.c``          the column ``d.t.c`` only
URI, STORAGE_TYPE, ...    nothing (no request here names them)
========================  ==================================================

A request with ``db`` None is on the server; with ``table`` None, on the
database. A grant covers levels as follows: ``OWNER`` covers every level;
``ALL`` covers every level but ``OWNER`` (it does not make its holder the
owner); any other level covers only itself (``INSERT`` does not imply
``SELECT``). With ``grant_option=True`` only grants made ``WITH GRANT OPTION``
count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import idl
from subscriber.protocol.errors import InvalidRequestError, NotFoundError

__all__ = [
    "Principal",
    "Privilege",
    "PrivilegeIndex",
    "check_privilege",
    "parse_level",
    "principals",
    "privilege_name",
    "privileges_of",
]

_co = idl.catalog_objects
LEVELS: Mapping[str, int] = dict(_co.TPrivilegeLevel._NAMES_TO_VALUES)
_LEVEL_NAMES = {v: k for k, v in LEVELS.items()}
_SCOPE_NAMES = dict(_co.TPrivilegeScope._VALUES_TO_NAMES)
_TYPE_NAMES = dict(_co.TPrincipalType._VALUES_TO_NAMES)
PUBLIC_ROLE = "public"


def parse_level(level: str | int) -> str:
    """The level name (``"SELECT"``) of a name in any case or a ``TPrivilegeLevel`` value.

    Raises:
        InvalidRequestError: no such privilege level.
    """
    if isinstance(level, str) and level.upper() in LEVELS:
        return level.upper()
    if isinstance(level, int) and not isinstance(level, bool) and level in _LEVEL_NAMES:
        return _LEVEL_NAMES[level]
    raise InvalidRequestError(
        f"unknown privilege level {level!r}: expected one of {', '.join(LEVELS)} "
        "or a TPrivilegeLevel value"
    )


def privilege_name(privilege: Any) -> str:
    """Impala's name of a ``TPrivilege``, as Impala's ``PrincipalPrivilege`` builds it.

    For example ``server=server1->db=d->table=t->action=select->grantoption=false``.
    The name (with the principal's id and type) makes the object's key; ``ALL``
    carries no ``action`` part, as in Impala's ``PrincipalPrivilege``.
    """
    scope = _SCOPE_NAMES[privilege.scope]
    parts = [f"server={(privilege.server_name or '').lower()}"]
    if scope == "URI":
        parts.append(f"uri={privilege.uri}")  # URIs are case-sensitive
    if scope in ("DATABASE", "TABLE", "COLUMN"):
        parts.append(f"db={privilege.db_name.lower()}")
    if scope in ("TABLE", "COLUMN"):
        parts.append(f"table={privilege.table_name.lower()}")
    if scope == "COLUMN":
        parts.append(f"column={privilege.column_name.lower()}")
    if privilege.privilege_level != LEVELS["ALL"]:
        parts.append(f"action={_LEVEL_NAMES[privilege.privilege_level].lower()}")
    parts.append(f"grantoption={'true' if privilege.has_grant_opt else 'false'}")
    return "->".join(parts)


@dataclass(frozen=True, slots=True)
class Principal:
    """A role, user or group (``type``: ``"ROLE"``, ``"USER"``, ``"GROUP"``)."""

    name: str
    type: str
    id: int
    grant_groups: tuple[str, ...] = ()  # for a ROLE: the groups holding it
    roles: tuple[str, ...] = ()  # the roles granted to this principal

    @classmethod
    def from_thrift(cls, principal: Any) -> Principal:
        kind = _TYPE_NAMES[principal.principal_type]
        name = principal.principal_name
        return cls(
            name.lower() if kind == "ROLE" else name,
            kind,
            principal.principal_id,
            tuple(principal.grant_groups or ()),
            tuple(r.lower() for r in principal.roles or ()),
        )


@dataclass(frozen=True, slots=True)
class Privilege:
    """One grant held by the principal (``principal_type``, ``principal_id``)."""

    principal_type: str
    principal_id: int
    scope: str
    level: str
    grant_option: bool
    server: str | None = None
    db: str | None = None
    table: str | None = None
    column: str | None = None

    @classmethod
    def from_thrift(cls, privilege: Any) -> Privilege:
        def low(value: str | None) -> str | None:
            return value.lower() if value is not None else None

        return cls(
            _TYPE_NAMES[privilege.principal_type],
            privilege.principal_id,
            _SCOPE_NAMES[privilege.scope],
            _LEVEL_NAMES[privilege.privilege_level],
            bool(privilege.has_grant_opt),
            low(privilege.server_name),
            low(privilege.db_name),
            low(privilege.table_name),
            low(privilege.column_name),
        )

    def covers_level(self, level: str) -> bool:
        return (
            self.level == "OWNER"
            or self.level == level
            or (self.level == "ALL" and level != "OWNER")
        )

    def covers_object(self, db: str | None, table: str | None, column: str | None) -> bool:
        """Whether this grant's object is the requested one or an ancestor of it."""
        if self.scope == "SERVER":
            return True
        if self.scope == "DATABASE":
            return db is not None and self.db == db
        if self.scope == "TABLE":
            return table is not None and (self.db, self.table) == (db, table)
        if self.scope == "COLUMN":
            return column is not None and (self.db, self.table, self.column) == (db, table, column)
        return False


_PrincipalRef = tuple[str, str]  # (type, normalized name)


class PrivilegeIndex:
    """An immutable index of principals and their grants. Build with :meth:`build`.

    Safe to share between threads: it is never mutated after construction.
    """

    def __init__(
        self,
        principals: Mapping[_PrincipalRef, Principal],
        grants: Mapping[tuple[str, int], Mapping[str | None, tuple[Privilege, ...]]],
    ) -> None:
        self._principals = dict(principals)
        # (principal type, id) -> db (None: SERVER scope) -> grants
        self._grants = {k: dict(v) for k, v in grants.items()}
        self._by_id = {(p.type, p.id): p for p in self._principals.values()}

    @classmethod
    def build(cls, principals: Iterable[Any], privileges: Iterable[Any]) -> PrivilegeIndex:
        """Index decoded ``TPrincipal`` and ``TPrivilege`` structs (or our values).

        Grants whose principal is not among ``principals`` are kept and count
        for a principal that later turns up with that type and id.
        """
        by_ref: dict[_PrincipalRef, Principal] = {}
        for item in principals:
            principal = item if isinstance(item, Principal) else Principal.from_thrift(item)
            by_ref[(principal.type, principal.name)] = principal
        buckets: dict[tuple[str, int], dict[str | None, list[Privilege]]] = {}
        for item in privileges:
            grant = item if isinstance(item, Privilege) else Privilege.from_thrift(item)
            db = None if grant.scope == "SERVER" else grant.db
            buckets.setdefault((grant.principal_type, grant.principal_id), {}).setdefault(
                db, []
            ).append(grant)
        frozen = {
            owner: {db: tuple(gs) for db, gs in per_db.items()} for owner, per_db in buckets.items()
        }
        return cls(by_ref, frozen)

    @classmethod
    def from_objects(cls, objects: Iterable[Any]) -> PrivilegeIndex:
        """Index the PRINCIPAL and PRIVILEGE objects among decoded ``TCatalogObject`` s."""
        kinds = _co.TCatalogObjectType
        principals, privileges = [], []
        for obj in objects:
            if obj.type == kinds.PRINCIPAL and obj.principal is not None:
                principals.append(obj.principal)
            elif obj.type == kinds.PRIVILEGE and obj.privilege is not None:
                privileges.append(obj.privilege)
        return cls.build(principals, privileges)

    def principal(self, name: str, principal_type: str) -> Principal | None:
        kind = principal_type.upper()
        return self._principals.get((kind, name.lower() if kind == "ROLE" else name))

    def principals(self) -> Iterator[Principal]:
        return iter(self._principals.values())

    def grants(self, principal: Principal) -> Iterator[Privilege]:
        """Every grant ``principal`` holds directly."""
        for group in self._grants.get((principal.type, principal.id), {}).values():
            yield from group

    def grants_within(self, principal: Principal, db: str | None) -> Iterator[Privilege]:
        """The grants of ``principal`` that can cover ``db``: SERVER ones, then ``db``'s."""
        per_db = self._grants.get((principal.type, principal.id), {})
        yield from per_db.get(None, ())
        if db is not None:
            yield from per_db.get(db, ())

    def holders(self, user: str, groups: Iterable[str]) -> list[Principal]:
        """Every principal whose grants reach ``user`` in ``groups`` (see module doc)."""
        groups = set(groups)
        found: list[Principal] = []
        pending: list[str] = [PUBLIC_ROLE]
        for ref in [("USER", user), *(("GROUP", g) for g in sorted(groups))]:
            holder = self._principals.get(ref)
            if holder is not None:
                found.append(holder)
                pending.extend(holder.roles)
        pending.extend(
            p.name
            for p in self._principals.values()
            if p.type == "ROLE" and groups.intersection(p.grant_groups)
        )
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            role = self._principals.get(("ROLE", name))
            if name in seen or role is None:
                continue
            seen.add(name)
            found.append(role)
            pending.extend(role.roles)
        return found


def check_privilege(
    index: PrivilegeIndex,
    user: str,
    groups: Iterable[str],
    level: str | int,
    db: str | None,
    table: str | None = None,
    column: str | None = None,
    *,
    grant_option: bool = False,
) -> bool:
    """Whether ``user`` in ``groups`` holds ``level`` on the named object.

    Semantics in the module docstring. Names of databases, tables and columns
    are compared lower-cased.

    Raises:
        InvalidRequestError: an unknown level, a column without a table, a
            table without a database, or ``groups`` given as one string.
    """
    wanted = parse_level(level)
    if isinstance(groups, str):
        raise InvalidRequestError(
            f"groups must be a collection of names, not the string {groups!r}"
        )
    if (column is not None and table is None) or (table is not None and db is None):
        raise InvalidRequestError("name a column with its table, and a table with its database")
    db, table, column = (n.lower() if n is not None else None for n in (db, table, column))
    for holder in index.holders(user, groups):
        for grant in index.grants_within(holder, db):
            if (
                grant.covers_level(wanted)
                and grant.covers_object(db, table, column)
                and (grant.grant_option or not grant_option)
            ):
                return True
    return False


def principals(index: PrivilegeIndex, principal_type: str | None = None) -> list[Principal]:
    """Every principal (of one type), sorted by type and name."""
    kind = principal_type.upper() if principal_type else None
    return sorted(
        (p for p in index.principals() if kind is None or p.type == kind),
        key=lambda p: (p.type, p.name),
    )


def privileges_of(
    index: PrivilegeIndex, principal_name: str, principal_type: str = "ROLE"
) -> list[Privilege]:
    """The grants held directly by one principal, sorted by object and level.

    Raises:
        NotFoundError: no such principal.
        InvalidRequestError: ``principal_type`` is not ROLE, USER or GROUP.
    """
    if principal_type.upper() not in ("ROLE", "USER", "GROUP"):
        raise InvalidRequestError(
            f"principal type must be ROLE, USER or GROUP, not {principal_type!r}"
        )
    principal = index.principal(principal_name, principal_type)
    if principal is None:
        raise NotFoundError(f"no {principal_type.upper()} principal named {principal_name!r}")
    return sorted(index.grants(principal), key=_grant_order)


def _grant_order(grant: Privilege) -> tuple[str, str, str, str, str, bool]:
    return (
        grant.scope,
        grant.db or "",
        grant.table or "",
        grant.column or "",
        grant.level,
        grant.grant_option,
    )
