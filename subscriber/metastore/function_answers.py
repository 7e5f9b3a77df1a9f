"""HMS function reads answered from a cache view (pure): ``get_all_functions``,
``get_functions``, ``get_function``.

A handler group of :class:`~subscriber.metastore.answers.CacheAnswers`, which gives
it the shared lookups (:class:`~subscriber.metastore.lookups.Lookups`). HMS 2.3 lists
every function in its database's row order, so ``get_all_functions`` of two or more
is answered in the order learnt from HMS (:mod:`subscriber.metastore.orders`); names are matched the
way HMS matches them (the name asked for lower-cased, the stored name as is).
"""

from __future__ import annotations

from typing import Any

import idl
from subscriber.cache import CacheView
from subscriber.metastore import orders, shapes
from subscriber.metastore.framing import success_struct
from subscriber.metastore.lookups import Handler, Lookups
from subscriber.metastore.shapes import Forward
from subscriber.protocol import codec
from subscriber.protocol.binary import STRUCT
from subscriber.protocol.keys import FUNCTION_PREFIX, GLOBAL

__all__ = ["FunctionAnswers"]

hms = idl.hive_metastore


class FunctionAnswers:
    """The function handlers over shared :class:`Lookups`."""

    def __init__(self, lookups: Lookups) -> None:
        self._lookups = lookups

    def handlers(self) -> dict[str, Handler]:
        return {
            "get_all_functions": self._get_all_functions,
            "get_functions": self._get_functions,
            "get_function": self._get_function,
        }

    def _functions(self, view: CacheView, db: str | None) -> list[tuple[str, Any, int]]:
        """(name, HMS Function, version) of the cached functions (of ``db``), sorted."""
        if self._lookups.databases is not None and db is None:
            raise Forward("not every database is followed")
        dbs = [db.lower()] if db is not None else [d for d in view.by_database if d != GLOBAL]
        found = []
        for d in dbs:
            for key in view.keys_of(d):
                if key.startswith(FUNCTION_PREFIX):
                    fn = self._lookups.decode(view.objects[key]).fn
                    hms_fn = shapes.hms_function(fn)
                    if hms_fn is None:
                        raise Forward("function kept without its HMS struct")
                    found.append((hms_fn.functionName, hms_fn, view.objects[key].version))
        return sorted(found, key=lambda item: (item[1].dbName or "", item[0]))

    def _get_all_functions(self, view: CacheView, args: Any) -> bytes:
        # HMS 2.3 lists them in its database's row order (creation order on Derby).
        rows = {f"{f.dbName}.{name}": (v, f) for name, f, v in self._functions(view, None)}
        functions = self._lookups.orders.arrange("functions", rows, orders.function_names)
        response = hms.GetAllFunctionsResponse(functions=functions)
        return success_struct(STRUCT, codec.encode(response, check=False))

    def _get_functions(self, view: CacheView, args: Any) -> bytes:
        db = args.dbName or ""
        self._lookups.follows(db)
        names = [name for name, _, _ in self._functions(view, db)]
        return shapes.strings(shapes.matching(names, args.pattern))

    def _get_function(self, view: CacheView, args: Any) -> bytes:
        db, name = args.dbName or "", args.funcName or ""
        self._lookups.follows(db)
        for fn_name, fn, _ in self._functions(view, db):
            # HMS 2.3 lower-cases the name asked for and compares it with the stored
            # name as is (measured: a function stored as "Alpha" is never found).
            if fn_name == name.lower():
                return success_struct(STRUCT, codec.encode(fn, check=False))
        raise hms.NoSuchObjectException(message=f"Function {db}.{name} does not exist")
