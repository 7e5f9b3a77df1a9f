"""Running a Maven release (3.1, 4.x) as the embedded HMS: settings, class path, schema.

:func:`standalone_properties` are the hive-site.xml settings such an HMS needs on
top of the backend's, :func:`class_path` what it runs with, and
:func:`ensure_schema` creates its schema with the release's own schematool
(``-initSchema -dbType derby|postgres|mysql``) unless the database has one. A
fresh Derby schema is kept as a template in ``cache_dir`` and copied for the next
data directory (schematool takes 5-15 s; a copy well under one).

Facts relied on (read in the jars and tried here, HMS 3.1.3 and 4.0.1 on Java 17):

* The default ``metastore.expression.proxy`` is a Hive QL class not in a
  standalone distribution (the HMS dies at start); the distribution's own
  ``metastore-site.xml`` names ``DefaultPartitionExpressionProxy`` and runs
  ``EventCleanerTask``: the same here.
* Both refuse ``get_current_notificationEventId`` / ``get_next_notification`` to a
  client that is not a Hadoop proxy user ("User root is not allowed to perform
  this API call") unless ``hive.metastore.event.db.notification.api.auth`` is false.
* 4.0 binds to ``hive.metastore.thrift.bind.host``; 3.1 has no such key and
  listens on every interface.
* 4.0 keeps external tables (and managed ones its default transformer turns
  external) under ``hive.metastore.warehouse.external.dir``: set to the warehouse,
  or they would go to ``/warehouse/tablespace/external/hive``.
* Both find ``hive-site.xml`` in ``$HIVE_CONF_DIR`` (``MetastoreConf.findConfigFile``:
  class path, ``METASTORE_CONF_DIR``, ``METASTORE_HOME/conf``, ``HIVE_CONF_DIR``);
  schematool reads its scripts from ``$METASTORE_HOME/scripts/metastore/upgrade/<db>``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from catalogd.hms.embedded.config import Backend, DerbyBackend, PostgresBackend
from catalogd.hms.embedded.java import FAST_START_FLAGS, tail_from
from catalogd.hms.embedded.mysql import MariaDbBackend
from catalogd.hms.embedded.releases import Installed
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError

__all__ = ["class_path", "ensure_schema", "standalone_properties"]

_METASTORE = "org.apache.hadoop.hive.metastore"
_DB_TYPES = {DerbyBackend: "derby", PostgresBackend: "postgres", MariaDbBackend: "mysql"}


def standalone_properties(
    release: Installed, *, warehouse_uri: str, notification_events: bool, bind_loopback: bool
) -> dict[str, str]:
    """hive-site.xml settings of a 3.1/4.x HMS, to apply after the backend's."""
    props = {
        "datanucleus.schema.autoCreateAll": "false",  # schematool made the schema
        "hive.metastore.schema.verification": "true",
        "metastore.expression.proxy": f"{_METASTORE}.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": f"{_METASTORE}.events.EventCleanerTask",
        "hive.metastore.event.db.notification.api.auth": "false",
        "hive.metastore.warehouse.external.dir": warehouse_uri,
    }
    if notification_events and release.release.listener_class:
        props["hive.metastore.transactional.event.listeners"] = release.release.listener_class
    if bind_loopback and release.release.bind_host_key:
        props[release.release.bind_host_key] = "127.0.0.1"
    return props


def class_path(release: Installed, backend: Backend) -> list[str]:
    """The JVM class path: the backend's driver, then the release's jars.

    No directory on it (AppCDS archives only jars): the HMS and schematool find
    ``hive-site.xml`` through ``HIVE_CONF_DIR``.
    """
    entries: list[str] = []
    if not isinstance(backend, DerbyBackend):
        if not backend.driver_jar.is_file():
            raise MetastoreUnavailableError(
                f"no JDBC driver at {backend.driver_jar}; run .ci/install-system-deps "
                "(Debian packages libpostgresql-jdbc-java, libmariadb-java)"
            )
        entries.append(str(backend.driver_jar))
    return entries + [str(p) for p in release.jars]


def ensure_schema(
    release: Installed,
    backend: Backend,
    *,
    data_dir: Path,
    conf_dir: Path,
    java: str,
    cache_dir: Path | None,
    timeout_s: float,
) -> bool:
    """Create the release's schema in ``backend`` unless it has one; True if it did.

    ``conf_dir`` must hold the HMS's hive-site.xml already. Blocking (5-15 s when
    schematool runs). Raises MetastoreUnavailableError if the database or schematool
    fails, InvalidRequestError if psycopg/pymysql is missing.
    """
    if isinstance(backend, DerbyBackend):
        target = data_dir / "metastore_db"
        if target.exists():
            return False
        template = cache_dir / f"derby-{release.release.hive}" if cache_dir else None
        if template is not None and (template / "metastore_db").is_dir():
            shutil.copytree(template / "metastore_db", target)
            return True
        _schematool(release, backend, conf_dir, java, timeout_s)
        if template is not None:
            partial = template.with_name(f"{template.name}.{os.getpid()}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(target, partial / "metastore_db")
            shutil.rmtree(template, ignore_errors=True)
            partial.replace(template)
        return True
    if _has_schema(backend):
        return False
    _schematool(release, backend, conf_dir, java, timeout_s)
    return True


def _has_schema(backend: PostgresBackend | MariaDbBackend) -> bool:
    """Whether the database has a VERSION table (MariaDB: the database is made if absent)."""
    if isinstance(backend, PostgresBackend):
        try:
            import psycopg
        except ImportError as exc:
            raise InvalidRequestError("a PostgreSQL-backed HMS needs psycopg") from exc
        try:
            with psycopg.connect(backend.conninfo, autocommit=True, connect_timeout=10) as conn:
                row = conn.execute("""SELECT to_regclass('"VERSION"')""").fetchone()
        except psycopg.Error as exc:
            raise MetastoreUnavailableError(f"cannot reach {backend.jdbc_url}: {exc}") from exc
        return row is not None and row[0] is not None
    return backend.ensure_database()


def _schematool(
    release: Installed, backend: Backend, conf_dir: Path, java: str, timeout_s: float
) -> None:
    db_type = _DB_TYPES[type(backend)]
    log_file = conf_dir / f"schematool-{db_type}.log"
    cmd = [
        java, *FAST_START_FLAGS, "-cp", os.pathsep.join(class_path(release, backend)),
        release.release.schema_tool, "-dbType", db_type, "-initSchema",
    ]  # fmt: skip
    env = {**os.environ, "METASTORE_HOME": str(release.home), "HIVE_CONF_DIR": str(conf_dir)}
    with log_file.open("w") as log:
        try:
            done = subprocess.run(
                cmd, cwd=conf_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise MetastoreUnavailableError(
                f"Hive {release.release.hive} schematool timed out after {timeout_s:.0f} s"
            ) from exc
    if done.returncode != 0:
        raise MetastoreUnavailableError(
            f"Hive {release.release.hive} schematool -initSchema -dbType {db_type} failed "
            f"(exit {done.returncode}):\n{tail_from(log_file, 0)}"
        )
