"""A real Hive Metastore, run as a child JVM from the jars of the pyspark wheel.

Used by ``catalogd serve`` when no HMS is configured, by the test suite (one per
session) and by developers (``python -m catalogd.hms.embedded``).

Backends: :class:`DerbyBackend` (default: ``data_dir/metastore_db``, tables made
by the HMS itself) or :class:`PostgresBackend` (an existing, possibly empty
database; its schema is created before the HMS starts, because letting the HMS
create PostgreSQL tables lazily deadlocks Spark's first ``CREATE TABLE``), or
:class:`MariaDbBackend` (:mod:`.mysql`: a MariaDB/MySQL database, schema made the same way).

Start-up is dominated by JVM class loading. With ``fast_start`` the JVM runs the
C1 compiler only with the serial GC, and with a ``cache_dir`` it keeps an AppCDS
archive of the classes the HMS loads (written by the first run as it exits);
here that takes start-up from ~4-9 s to ~2 s. Benchmarks that measure HMS
steady-state speed should pass ``fast_start=False``.

With ``notification_events`` the HMS runs catalogd's listener
(:mod:`catalogd.hms.listener`, compiled with the machine's ``javac`` once
and cached), so it logs notification events and catalogd's change detection
can follow them instead of polling.

Facts relied on (HMS 2.3.10 from the pyspark wheel, checked here):
the log4j2 context
selector flag avoids a crash on a missing disruptor class; BoneCP is not in the
wheel, so the pool is HikariCP; HMS 2.3 has no bind-host setting and listens on
every interface; a Derby database admits one HMS at a time.

Modules: :mod:`.config` (backends, hive-site.xml, log4j2.properties),
:mod:`.java` (pyspark jars, Java version), :mod:`.postgres` (the PostgreSQL
schema), :mod:`.jvm` (command line, AppCDS, probe, stop), :mod:`.process`
(:class:`EmbeddedMetastore`), :mod:`.templates` (``deploy/hms``) and
:mod:`.cli` (``python -m catalogd.hms.embedded``). This package re-exports
their public names.
"""

from __future__ import annotations

from catalogd.hms.embedded.cli import main
from catalogd.hms.embedded.config import (
    LOG4J2_TEMPLATE,
    Backend,
    DerbyBackend,
    PostgresBackend,
    hive_site_properties,
    render_hive_site,
    render_log4j2,
)
from catalogd.hms.embedded.java import FAST_START_FLAGS, find_pyspark_jars, java_version
from catalogd.hms.embedded.jvm import MAIN_CLASS
from catalogd.hms.embedded.mysql import MariaDbBackend
from catalogd.hms.embedded.postgres import (
    POSTGRES_EXTRA_DDL,
    SCHEMA_VERSION,
    create_postgres_schema,
    datanucleus_properties,
)
from catalogd.hms.embedded.process import EmbeddedMetastore
from catalogd.hms.embedded.templates import deploy_templates, write_templates

__all__ = [
    "FAST_START_FLAGS",
    "LOG4J2_TEMPLATE",
    "MAIN_CLASS",
    "MariaDbBackend",
    "POSTGRES_EXTRA_DDL",
    "SCHEMA_VERSION",
    "Backend",
    "DerbyBackend",
    "EmbeddedMetastore",
    "PostgresBackend",
    "create_postgres_schema",
    "datanucleus_properties",
    "deploy_templates",
    "find_pyspark_jars",
    "hive_site_properties",
    "java_version",
    "main",
    "render_hive_site",
    "render_log4j2",
    "write_templates",
]
