"""The project's Thrift IDL, loaded once at import time with thriftpy2.

This is the only place in the project that parses ``.thrift`` files. Each file
becomes a module registered in ``sys.modules`` under ``idl.<File>_thrift``, so
the structs it defines are picklable (PySpark pickles closures that capture
them): unpickling imports ``idl.<File>_thrift``, which imports this package,
which registers the module.

Modules:

* :data:`hive_metastore` -- the Hive Metastore API: every struct and method of
  HMS 2.3, 3.1 and 4.x, generated from the releases' compiled classes by
  ``idl/generate/generate.py`` (a developer tool, not installed).
* :data:`fb303` -- the service HMS extends (``getName``, ``shutdown``, ...).
* :data:`catalog_objects` -- Impala's ``CatalogObjects.thrift`` (TCatalogObject
  and friends) with the types it includes.
* :data:`catalog_service` -- catalogd's own wire messages (deltas, snapshots,
  heartbeats, admin requests and responses).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import thriftpy2

IDL_DIR = Path(__file__).resolve().parent


def _load(file_name: str) -> ModuleType:
    module_name = f"{__name__}.{file_name.removesuffix('.thrift')}_thrift"
    return thriftpy2.load(str(IDL_DIR / file_name), module_name=module_name)


# CatalogService includes CatalogObjects, which includes hive_metastore and the
# Impala helper files; loading it registers all of them. The explicit loads
# below are cache hits that return the same module objects.
catalog_service: ModuleType = _load("CatalogService.thrift")
catalog_objects: ModuleType = _load("CatalogObjects.thrift")
hive_metastore: ModuleType = _load("hive_metastore.thrift")
fb303: ModuleType = _load("fb303.thrift")

__all__ = ["IDL_DIR", "catalog_objects", "catalog_service", "fb303", "hive_metastore"]
