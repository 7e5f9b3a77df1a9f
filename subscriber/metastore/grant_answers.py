"""HMS privilege reads answered from the cached grants (pure): ``list_privileges``,
``get_privilege_set``.

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers`. catalogd
keeps each principal's grants as HMS returned them (``TPrincipal``'s
``metastore_names``, ``metastore_privileges``, ``metastore_roles``:
:mod:`catalogd.conversion.grants`), and the answers are rebuilt from those structs
the way HMS 2.3 builds them (``HiveMetaStore.list_privileges`` /
``get_privilege_set`` over ``ObjectStore``; measured on HMS 2.3.10, checked by
``tests/integration/test_hms_endpoint_grants.py``):

* a principal is answered for only when catalogd asked HMS for exactly that name
  and type (``metastore_names``); any other -- a user holding no role and no
  grant catalogd keeps, a group holding only roles, a name that was never probed --
  is forwarded, since HMS would list whatever grants it holds;
* names are matched as HMS matches them: database, table and column asked for are
  lower-cased and compared with the stored names as they are (a column granted as
  ``C2`` is never found); principal and role names are case-sensitive;
* an object-specific ``list_privileges`` answers with the object as asked (its
  database and table names in the caller's case, the stored column name); with no
  object type, or no database, it lists the stored objects;
* two or more rows come in the metastore database's row order, which depends on
  the query: learnt from HMS's answer (:mod:`subscriber.metastore.orders`);
* ``get_privilege_set``'s maps are Java ``HashMap`` s: present or absent by object
  type and argument, their keys in ``HashMap`` iteration order (:func:`java_order`);
  roles sharing a hash bucket (their order there is the database's) are forwarded.

Forwarded always: partitions (HMS reads the table to name the partition), calls
HMS fails (no object, a missing name), every principal's grants on an object
(``principal_name`` unset), everything while the upstream HMS is not known to be
HMS 2.x (``upstream_reads_catalogs`` is False only for 2.x), and everything until
HMS has answered one privilege call forwarded here (:attr:`GrantAnswers.upstream_answers`):
an HMS whose authorization pre-event listener refuses these calls to remote clients
(``MetaStoreAuthzAPIAuthorizerEmbedOnly``, Hive's SQL-standard authorization set-up)
keeps refusing them, never served from the cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import replies
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.keys import principal_key

__all__ = ["GrantAnswers", "java_order"]

hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore
K = hms.HiveObjectType
USER, ROLE, GROUP = hms.PrincipalType.USER, hms.PrincipalType.ROLE, hms.PrincipalType.GROUP
_TYPES = {USER: "USER", ROLE: "ROLE", GROUP: "GROUP"}
_PUBLIC = "public"
_TREEIFY = 8  # java.util.HashMap.TREEIFY_THRESHOLD: such a bucket is a tree


def java_order(keys: Iterable[str]) -> list[str] | None:
    """``keys`` (distinct, in insertion order) in the iteration order of a Java
    ``HashMap`` (or ``HashSet``) they were put into: by bucket of the spread
    ``String.hashCode``, insertion order within a bucket. None when a bucket would
    be a tree (then the order is not this one)."""
    ordered = list(dict.fromkeys(keys))
    buckets = _buckets(ordered)
    if any(buckets.count(b) >= _TREEIFY for b in set(buckets)):
        return None
    return [k for _, k in sorted(zip(buckets, ordered, strict=True), key=lambda bk: bk[0])]


def _buckets(keys: list[str]) -> list[int]:
    """The bucket of each of ``keys`` in a default ``HashMap`` holding just them (16
    buckets, doubled whenever the size passes three quarters)."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    return [_spread(_string_hash(k)) & (capacity - 1) for k in keys]


def _string_hash(value: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    units = value.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFF_FFFF
    return h


def _spread(h: int) -> int:
    return h ^ (h >> 16)


def _lower(value: str | None) -> str:
    return (value or "").lower()


def _row_name(p: Any) -> str:
    """One grant's identity in an answer, whatever case its object was asked in."""
    ref, info = p.hiveObject, p.grantInfo
    return repr(
        (
            p.principalName,
            p.principalType,
            ref.objectType,
            _lower(ref.dbName),
            _lower(ref.objectName),
            tuple(ref.partValues or ()),
            _lower(ref.columnName),
            _info_name(info),
        )
    )


def _info_name(info: Any) -> str:
    return repr((info.privilege, info.grantor, info.grantorType, info.grantOption, info.createTime))


def _listed_names(result: Any) -> list[str] | None:
    return None if result.success is None else [_row_name(p) for p in result.success]


def _set_names(result: Any) -> list[str] | None:
    """Rows of a ``PrincipalPrivilegeSet``: ``field/key/grant`` in the reply's order."""
    found = result.success
    if found is None:
        return None
    names = []
    for field in ("userPrivileges", "groupPrivileges", "rolePrivileges"):
        for key, infos in (getattr(found, field) or {}).items():
            names += [f"{field}/{key}/{_info_name(i)}" for i in infos]
    return names


class GrantAnswers:
    """The privilege handlers over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups
        self.upstream_answers = False
        """Whether HMS answered a privilege call forwarded here with a result (learnt;
        until then every privilege call is forwarded, see the module docstring)."""

    def handlers(self) -> dict[str, Handler]:
        return {
            "list_privileges": self._list_privileges,
            "get_privilege_set": self._get_privilege_set,
        }

    # -- the principal's cached HMS structs ---------------------------------------------

    def _check_upstream(self) -> None:
        """Raises Forward unless the upstream is HMS 2.x."""
        if self._lookups.upstream_reads_catalogs is not False:
            raise Forward("privilege answers are HMS 2.x's (upstream not known to be 2.x)")

    def _answer(self, encoded: bytes) -> bytes:
        """``encoded``, once HMS has answered a privilege call (else Forward, to learn it)."""
        if not self.upstream_answers:
            raise Forward("privilege calls: HMS must answer one first", learn=self._learn)
        return encoded

    def _learn(self, method: str, reply: bytes) -> None:
        if replies.succeeded(reply):  # a refusal keeps everything forwarded
            self.upstream_answers = True

    def _arrange(self, scope: Any, rows: dict[str, tuple[int, Any]], names: Any) -> list[Any]:
        """:meth:`RowOrders.arrange`; a forward to learn the order also learns whether
        HMS answers privilege calls."""
        try:
            return self._lookups.orders.arrange(scope, rows, names)
        except Forward as exc:
            order = exc.learn
            if self.upstream_answers or order is None:
                raise

            def both(method: str, reply: bytes) -> None:
                self._learn(method, reply)
                order(method, reply)

            raise Forward(str(exc), learn=both) from None

    def _principal(self, view: CacheView, name: str, kind: int) -> tuple[int, Any]:
        """(catalog version, TPrincipal) of a principal catalogd probed by exactly
        this name and type. Raises Forward otherwise."""
        entry = view.objects.get(principal_key(name, _TYPES[kind]))
        if entry is None:
            raise Forward(f"principal {name} not in the cache (catalogd did not ask HMS)")
        principal = self._lookups.decode(entry).principal
        if principal is None or name not in (principal.metastore_names or ()):
            raise Forward(f"principal {name}: that name's grants not in the cache")
        if principal.metastore_privileges is None or principal.metastore_roles is None:
            raise Forward(f"principal {name} kept without its HMS structs")
        return entry.version, principal

    def _grants(self, view: CacheView, name: str, kind: int) -> tuple[int, list[Any]]:
        version, principal = self._principal(view, name, kind)
        mine = [p for p in principal.metastore_privileges if p.principalName == name]
        return version, mine

    def _roles(self, view: CacheView, name: str, kind: int) -> list[str]:
        """The roles granted directly to a principal (HMS's ``listMRoles``)."""
        _, principal = self._principal(view, name, kind)
        return [m.roleName for m in principal.metastore_roles if m.principalName == name]

    # -- list_privileges ----------------------------------------------------------------

    def _list_privileges(self, view: CacheView, args: Any) -> bytes:
        ref, name, kind = args.hiveObject, args.principal_name, args.principal_type
        if ref is None or name is None or kind not in _TYPES:
            raise Forward("no object, principal or principal type: not served")
        if ref.objectType is not None:
            _check_object(ref, listing=True)
        self._check_upstream()
        version, grants = self._grants(view, name, kind)
        rows = [_answered(p, ref) for p in grants if _selects(ref, p.hiveObject)]
        scope = (
            "list_privileges",
            name,
            kind,
            ref.objectType,
            _lower(ref.dbName),
            _lower(ref.objectName),
            _lower(ref.columnName),
        )
        named = {_row_name(p): (version, p) for p in rows}
        if len(named) != len(rows):
            raise Forward("two grants differ only in name case")
        listed = self._arrange(scope, named, _listed_names)
        return self._answer(
            codec.encode(_SERVICE.list_privileges_result(success=listed), check=False)
        )

    # -- get_privilege_set --------------------------------------------------------------

    def _get_privilege_set(self, view: CacheView, args: Any) -> bytes:
        ref, user, groups = args.hiveObject, args.user_name, args.group_names
        if ref is None:
            raise Forward("no object: HMS fails")
        self._check_upstream()
        if ref.objectType is None:  # HMS 2.3 returns null: a result with nothing set
            return self._answer(codec.encode(_SERVICE.get_privilege_set_result(), check=False))
        _check_object(ref, listing=False)
        groups = list(dict.fromkeys(groups or ()))
        group_keys = java_order(groups)
        if group_keys is None:
            raise Forward("too many groups in one hash bucket")
        rows: dict[str, tuple[int, Any]] = {}
        maps: list[tuple[str, dict[str, list[str]]]] = []

        def add(field: str, keys: list[str], kind: int, empty_keys: bool, empty_map: bool) -> None:
            found: dict[str, list[str]] = {}
            for key in keys:
                version, grants = self._grants(view, key, kind)
                chosen = [p.grantInfo for p in grants if _selects(ref, p.hiveObject)]
                if chosen or empty_keys:
                    names = [f"{field}/{key}/{_info_name(i)}" for i in chosen]
                    if len(set(names)) != len(names):
                        raise Forward("two grants differ only in name case")
                    rows.update((n, (version, i)) for n, i in zip(names, chosen, strict=True))
                    found[key] = names
            if found or empty_map:
                maps.append((field, found))

        # HMS 2.3: on GLOBAL a user or group is a key only when it holds a global grant
        # and there is no role map; on other objects every principal asked is a key.
        global_ = ref.objectType == K.GLOBAL
        if user is not None:
            add("userPrivileges", [user], USER, empty_keys=not global_, empty_map=not global_)
        if groups:
            add("groupPrivileges", group_keys, GROUP, empty_keys=not global_, empty_map=True)
        if not global_:
            roles = self._all_roles(view, user, groups)
            if roles:
                role_keys = java_order(roles)
                if role_keys is None or _shares_bucket(role_keys):
                    raise Forward("roles in one hash bucket: their order is the database's")
                add("rolePrivileges", role_keys, ROLE, empty_keys=True, empty_map=True)
        scope = ("get_privilege_set", ref.objectType, _object_key(ref), user, tuple(groups))
        arranged = self._arrange(scope, rows, _set_names)
        position = {id(info): i for i, info in enumerate(arranged)}
        found = hms.PrincipalPrivilegeSet()
        for field, by_key in maps:
            setattr(
                found,
                field,
                {
                    key: sorted((rows[n][1] for n in names), key=lambda i: position[id(i)])
                    for key, names in by_key.items()
                },
            )
        return self._answer(
            codec.encode(_SERVICE.get_privilege_set_result(success=found), check=False)
        )

    def _all_roles(self, view: CacheView, user: str | None, groups: list[str]) -> list[str]:
        """Every role of the user (``public`` included) and the groups, with the roles
        those are members of, transitively (HMS's ``listAllRolesInHierarchy``)."""
        direct: list[str] = []
        if user is not None:
            direct += [*self._roles(view, user, USER), _PUBLIC]
        for group in groups:
            direct += self._roles(view, group, GROUP)
        seen: dict[str, None] = {}
        todo = list(reversed(direct))
        while todo:
            role = todo.pop()
            if role not in seen:
                seen[role] = None
                todo += reversed(self._roles(view, role, ROLE))
        return list(seen)


def _shares_bucket(keys: list[str]) -> bool:
    buckets = _buckets(keys)
    return len(set(buckets)) != len(buckets)


def _object_key(ref: Any) -> tuple[str, str, str]:
    return _lower(ref.dbName), _lower(ref.objectName), _lower(ref.columnName)


def _check_object(ref: Any, listing: bool) -> None:
    """Forward what HMS answers by reading more than the grants, or fails on."""
    kind = ref.objectType
    if kind == K.PARTITION or (kind == K.COLUMN and ref.partValues):
        raise Forward("partition grants: HMS names the partition from its table")
    if kind not in (K.GLOBAL, K.DATABASE, K.TABLE, K.COLUMN):
        raise Forward(f"object type {kind}")
    if listing and ref.dbName is None and kind in (K.DATABASE, K.TABLE):
        return  # every grant of that type
    needed = {
        K.GLOBAL: (),
        K.DATABASE: (ref.dbName,),
        K.TABLE: (ref.dbName, ref.objectName),
        K.COLUMN: (ref.dbName, ref.objectName, ref.columnName),
    }[kind]
    if any(n is None for n in needed):
        raise Forward("an object name missing: HMS fails")


def _selects(ref: Any, stored: Any) -> bool:
    """Whether the grant on ``stored`` answers a query on ``ref`` (``ref`` checked)."""
    kind = ref.objectType
    if kind is None:
        return True
    if stored.objectType != kind:
        return False
    if kind == K.GLOBAL or (kind in (K.DATABASE, K.TABLE) and ref.dbName is None):
        return True
    if stored.dbName != _lower(ref.dbName):
        return False
    if kind == K.DATABASE:
        return True
    if stored.objectName != _lower(ref.objectName):
        return False
    if kind == K.TABLE:
        return True
    return not stored.partValues and stored.columnName == _lower(ref.columnName)


def _answered(p: Any, ref: Any) -> Any:
    """The grant as HMS lists it for a query on ``ref``: the stored object for a
    listing of every object (of a type), else the object as asked (column: stored)."""
    kind = ref.objectType
    if kind is None or kind == K.GLOBAL or (kind in (K.DATABASE, K.TABLE) and ref.dbName is None):
        return p
    stored = p.hiveObject
    echoed = hms.HiveObjectRef(
        objectType=kind,
        dbName=ref.dbName,
        objectName=ref.objectName if kind != K.DATABASE else None,
        columnName=stored.columnName if kind == K.COLUMN else None,
    )
    return hms.HiveObjectPrivilege(
        hiveObject=echoed,
        principalName=p.principalName,
        principalType=p.principalType,
        grantInfo=p.grantInfo,
    )
