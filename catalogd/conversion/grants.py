"""Roles, memberships and grants from the Hive Metastore as catalog objects.

:func:`fetch_grants` asks HMS (through a :class:`GrantReader`: a
:class:`~catalogd.hms.client.MetastoreClient` or any
:class:`~catalogd.sources.MetastoreSource`);
:func:`privilege_objects` turns the answers into ``PRINCIPAL`` and
``PRIVILEGE`` objects without I/O; :func:`load_privileges` does both.
:func:`grant_holders` finds who holds grants on given objects.

Discovery. HMS 2.3 has no call listing every principal that holds a grant, so
the principals asked about are: every role (``get_role_names``), every user,
group and role that is a member of one (``get_principals_in_role``), and the
``principals`` the caller names -- catalogd passes the owners of its databases
and tables (:func:`owners_of`), which is where Spark's automatic owner grants
live, and every holder of a grant on the server, a database or a table
(:func:`grant_holders`). A user or group outside all of these is not seen.

Conversion (HMS -> Impala):

* principals: every role becomes a ROLE principal (name lower-cased,
  ``grant_groups`` = the groups holding it); a user becomes a USER principal
  when it holds a role or a grant; a group becomes a GROUP principal only when
  it holds a grant (its roles already show in the roles' ``grant_groups``).
  Every principal carries ``roles``: the roles granted to it directly (our
  field 100, see ``idl/CatalogObjects.thrift``); ``public`` is implicit for
  everyone and never listed.
* scope from ``HiveObjectType``: GLOBAL -> SERVER (named ``server_name``),
  DATABASE, TABLE, COLUMN -> the same. PARTITION grants and column grants on a
  partition are dropped: Impala has no partition scope, and widening them to
  the table would grant more than HMS does.
* level from the privilege string (any case): SELECT, INSERT, ALL, ALTER,
  CREATE, DROP, OWNER and REFRESH map to the Impala level of that name.
  UPDATE and DELETE are dropped, not mapped to INSERT: in Hive they do not
  allow an INSERT, so mapping them would grant more than HMS does (Spark
  gives table owners INSERT, SELECT, UPDATE and DELETE: INSERT and SELECT
  carry the write and read). INDEX, LOCK, SHOW_DATABASE and unknown strings
  (HMS accepts any) are dropped too.
* names: databases, tables, columns, roles and the server lower-cased; users
  and groups keep their case.

HMS's own structs, for an HMS endpoint (``TPrincipal`` fields 101-103): each
principal also carries its HMS names as asked (``metastore_names``), every grant
HMS answered for them unconverted (``metastore_privileges``) and the roles granted
to them (``metastore_roles``), each list sorted by its encoded bytes (HMS's order is
its database's row order, which the endpoint learns from HMS's answers). When a
principal's answer held a grant of another principal (a metastore database
comparing names case-insensitively: ``HmsGrants.exact`` false) they are unset.

Determinism: the same HMS state gives the same objects, byte for byte (sorted
lists, ids from ``stable_id`` of the principal's key, HMS create times), so an
unchanged reload costs no version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import idl
from catalogd.core.placeholders import stable_id
from subscriber.privileges import privilege_name
from subscriber.protocol import codec
from subscriber.protocol.errors import InvalidRequestError, NotFoundError
from subscriber.protocol.keys import principal_key, privilege_key

__all__ = [
    "GrantReader",
    "HmsGrants",
    "fetch_grants",
    "grant_holders",
    "load_privileges",
    "owners_of",
    "privilege_objects",
]

co = idl.catalog_objects
hms = idl.hive_metastore
T = co.TCatalogObjectType

# HMS PrincipalType -> Impala TPrincipalType name, and back.
_FROM_HMS = {
    hms.PrincipalType.USER: "USER",
    hms.PrincipalType.ROLE: "ROLE",
    hms.PrincipalType.GROUP: "GROUP",
}
_TO_HMS = {v: k for k, v in _FROM_HMS.items()}
_SCOPES = {
    hms.HiveObjectType.GLOBAL: co.TPrivilegeScope.SERVER,
    hms.HiveObjectType.DATABASE: co.TPrivilegeScope.DATABASE,
    hms.HiveObjectType.TABLE: co.TPrivilegeScope.TABLE,
    hms.HiveObjectType.COLUMN: co.TPrivilegeScope.COLUMN,
}
_LEVELS = {
    name: getattr(co.TPrivilegeLevel, name)
    for name in ("SELECT", "INSERT", "ALL", "ALTER", "CREATE", "DROP", "OWNER", "REFRESH")
}
_PUBLIC = "public"
_I32 = 0x7FFF_FFFF


class GrantReader(Protocol):
    """The HMS calls :func:`fetch_grants` makes (a ``MetastoreClient`` has them)."""

    def get_role_names(self) -> list[str]: ...

    def get_principals_in_role(self, role: str) -> list[Any]: ...

    def list_privileges(self, principal_name: str, principal_type: int) -> list[Any]: ...


class ObjectGrantReader(Protocol):
    """The HMS call :func:`grant_holders` makes (a ``MetastoreSource`` has it)."""

    def grants_on(self, hive_object: Any) -> list[Any]: ...


@dataclass(frozen=True)
class HmsGrants:
    """What HMS answered: roles, memberships, grants (thriftpy2 structs, as returned).

    ``probed`` lists every (name, Impala type name) whose grants HMS answered;
    ``exact``: every answer held only grants of the principal asked about (false: the
    metastore database compared names case-insensitively).
    """

    roles: tuple[str, ...]
    memberships: tuple[Any, ...]  # RolePrincipalGrant
    privileges: tuple[Any, ...]  # HiveObjectPrivilege
    probed: tuple[tuple[str, str], ...]
    exact: bool = True


def owners_of(objects: Iterable[Any]) -> set[tuple[str, str]]:
    """The (name, ``"USER"``/``"GROUP"``/``"ROLE"``) owners of DATABASE and TABLE objects."""
    owners: set[tuple[str, str]] = set()
    for obj in objects:
        db = getattr(obj, "db", None)
        table = getattr(obj, "table", None)
        hms_db = getattr(db, "metastore_db", None) if db is not None else None
        hms_table = getattr(table, "metastore_table", None) if table is not None else None
        if hms_db is not None and hms_db.ownerName:
            owners.add((hms_db.ownerName, _FROM_HMS.get(hms_db.ownerType, "USER")))
        if hms_table is not None and hms_table.owner:
            owners.add((hms_table.owner, "USER"))  # HMS 2.3 tables have user owners only
    return owners


def grant_holders(
    reader: ObjectGrantReader, objects: Iterable[tuple[str, str | None]]
) -> set[tuple[str, str]]:
    """Every (name, ``"USER"``/``"GROUP"``/``"ROLE"``) holding a grant on the server
    or on one of ``objects``: (db, None) for a database, (db, table) for a table.

    Blocks on ``1 + len(objects)`` HMS calls; an object dropped meanwhile is skipped.
    """
    refs = [hms.HiveObjectRef(objectType=hms.HiveObjectType.GLOBAL)]
    for db, table in objects:
        if table is None:
            refs.append(hms.HiveObjectRef(objectType=hms.HiveObjectType.DATABASE, dbName=db))
        else:
            refs.append(
                hms.HiveObjectRef(objectType=hms.HiveObjectType.TABLE, dbName=db, objectName=table)
            )
    holders = set()
    for ref in refs:
        try:
            grants = reader.grants_on(ref)
        except NotFoundError:
            continue  # dropped meanwhile
        for grant in grants:
            kind = _FROM_HMS.get(grant.principalType)
            if kind is not None and grant.principalName:
                holders.add((grant.principalName, kind))
    return holders


def fetch_grants(client: GrantReader, principals: Iterable[tuple[str, str]] = ()) -> HmsGrants:
    """Ask HMS for roles, their members and every discovered principal's grants.

    ``principals`` are extra (name, ``"USER"``/``"GROUP"``/``"ROLE"``) pairs to
    probe. Blocks on 2 + (roles) + (principals) HMS calls. A role dropped while
    this runs is skipped.

    Raises:
        InvalidRequestError: an unknown principal type in ``principals``.
        MetastoreUnavailableError, MetastoreError: HMS failed.
    """
    probe: set[tuple[str, str]] = set()
    for name, kind in principals:
        if kind.upper() not in _TO_HMS:
            raise InvalidRequestError(f"principal type must be USER, GROUP or ROLE, not {kind!r}")
        probe.add((name, kind.upper()))
    roles = sorted(client.get_role_names())
    memberships: list[Any] = []
    for role in roles:
        probe.add((role, "ROLE"))
        try:
            members = client.get_principals_in_role(role)
        except NotFoundError:
            continue  # dropped since get_role_names
        memberships.extend(members)
        probe.update(
            (m.principalName, _FROM_HMS[m.principalType])
            for m in members
            if m.principalType in _FROM_HMS
        )
    privileges: list[Any] = []
    answered: list[tuple[str, str]] = []
    exact = True
    for name, kind in sorted(probe):
        try:
            answer = client.list_privileges(name, _TO_HMS[kind])
        except NotFoundError:
            continue
        answered.append((name, kind))
        exact = exact and all(
            p.principalName == name and p.principalType == _TO_HMS[kind] for p in answer
        )
        privileges.extend(answer)
    return HmsGrants(tuple(roles), tuple(memberships), tuple(privileges), tuple(answered), exact)


def load_privileges(
    client: GrantReader,
    *,
    principals: Iterable[tuple[str, str]] = (),
    server_name: str = "server1",
) -> dict[str, Any]:
    """PRINCIPAL and PRIVILEGE ``TCatalogObject`` s (version 0) by key, sorted by key.

    See :func:`fetch_grants` for ``principals``, blocking and errors.
    """
    return privilege_objects(fetch_grants(client, principals), server_name=server_name)


def _name(raw: str, kind: str) -> str:
    return raw.lower() if kind == "ROLE" else raw


def privilege_objects(grants: HmsGrants, *, server_name: str = "server1") -> dict[str, Any]:
    """Convert :class:`HmsGrants` to catalog objects by key (pure; see module doc)."""
    held: dict[tuple[str, str], set[str]] = {}  # (kind, name) -> roles granted to it
    groups_of_role: dict[str, set[str]] = {_name(r, "ROLE"): set() for r in grants.roles}
    for m in grants.memberships:
        kind = _FROM_HMS.get(m.principalType)
        role = _name(m.roleName, "ROLE")
        if kind is None or role == _PUBLIC:
            continue
        held.setdefault((kind, _name(m.principalName, kind)), set()).add(role)
        if kind == "GROUP":
            groups_of_role.setdefault(role, set()).add(m.principalName)

    converted: list[tuple[tuple[str, str], Any]] = []  # ((kind, name), TPrivilege sans id)
    for p in grants.privileges:
        kind = _FROM_HMS.get(p.principalType)
        privilege = _privilege(p, server_name.lower())
        if kind is not None and privilege is not None:
            converted.append(((kind, _name(p.principalName, kind)), privilege))

    grantees = {ref for ref, _ in converted}
    # Groups holding only roles are already named by those roles' grant_groups.
    refs = {ref for ref in held if ref[0] != "GROUP"} | grantees
    refs |= {("ROLE", role) for role in groups_of_role}
    ids = _principal_ids(refs)
    objects: dict[str, Any] = {}
    for kind, name in refs:
        principal = co.TPrincipal(
            principal_name=name,
            principal_id=ids[(kind, name)],
            principal_type=getattr(co.TPrincipalType, kind),
            grant_groups=sorted(groups_of_role.get(name, ())) if kind == "ROLE" else [],
            roles=sorted(held.get((kind, name), ())),
        )
        if grants.exact:
            _keep_hms_structs(principal, kind, grants)
        objects[principal_key(name, kind)] = co.TCatalogObject(
            type=T.PRINCIPAL, catalog_version=0, principal=principal
        )
    for (kind, name), privilege in converted:
        privilege.principal_id = ids[(kind, name)]
        privilege.principal_type = getattr(co.TPrincipalType, kind)
        key = privilege_key(privilege_name(privilege), privilege.principal_id, kind)
        earlier = objects.get(key)
        # The same grant twice (e.g. ALL and All): keep the oldest, deterministically.
        if earlier is None or privilege.create_time_ms < earlier.privilege.create_time_ms:
            objects[key] = co.TCatalogObject(
                type=T.PRIVILEGE, catalog_version=0, privilege=privilege
            )
    return dict(sorted(objects.items()))


def _keep_hms_structs(principal: Any, kind: str, grants: HmsGrants) -> None:
    """Set ``principal``'s fields 101-103 from what HMS answered (see module doc)."""
    name, hms_type = principal.principal_name, _TO_HMS[kind]

    def mine(principal_name: str | None, principal_type: int | None) -> bool:
        return principal_type == hms_type and _name(principal_name or "", kind) == name

    principal.metastore_names = sorted(
        n for n, k in grants.probed if k == kind and mine(n, hms_type)
    )
    principal.metastore_privileges = _sorted_structs(
        p for p in grants.privileges if mine(p.principalName, p.principalType)
    )
    principal.metastore_roles = _sorted_structs(
        m for m in grants.memberships if mine(m.principalName, m.principalType)
    )


def _sorted_structs(structs: Iterable[Any]) -> list[Any]:
    """Thrift structs without duplicates, sorted by their encoded bytes (deterministic)."""
    by_bytes = {codec.encode(s, check=False): s for s in structs}
    return [by_bytes[b] for b in sorted(by_bytes)]


def _privilege(p: Any, server_name: str) -> Any | None:
    """A ``TPrivilege`` (no principal yet) for one HMS grant, or None when dropped."""
    ref = p.hiveObject
    info = p.grantInfo
    scope = _SCOPES.get(getattr(ref, "objectType", None))
    level = _LEVELS.get((getattr(info, "privilege", None) or "").strip().upper())
    if scope is None or level is None or (ref.partValues and scope == co.TPrivilegeScope.COLUMN):
        return None
    if scope != co.TPrivilegeScope.SERVER and not ref.dbName:
        return None
    if scope in (co.TPrivilegeScope.TABLE, co.TPrivilegeScope.COLUMN) and not ref.objectName:
        return None
    if scope == co.TPrivilegeScope.COLUMN and not ref.columnName:
        return None

    def low(value: str | None) -> str | None:
        return value.lower() if value else None

    return co.TPrivilege(
        privilege_level=level,
        scope=scope,
        has_grant_opt=bool(info.grantOption),
        server_name=server_name,
        db_name=low(ref.dbName) if scope != co.TPrivilegeScope.SERVER else None,
        table_name=low(ref.objectName)
        if scope in (co.TPrivilegeScope.TABLE, co.TPrivilegeScope.COLUMN)
        else None,
        column_name=low(ref.columnName) if scope == co.TPrivilegeScope.COLUMN else None,
        create_time_ms=int(info.createTime or 0) * 1000,
    )


def _principal_ids(refs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Stable positive i32 ids; a rare hash collision takes the next free id, in key order."""
    ids: dict[tuple[str, str], int] = {}
    taken: set[int] = set()
    for kind, name in sorted(refs, key=lambda r: principal_key(r[1], r[0])):
        candidate = stable_id(principal_key(name, kind)) & _I32
        while candidate in taken:
            candidate = (candidate + 1) & _I32
        taken.add(candidate)
        ids[(kind, name)] = candidate
    return ids
