"""A MariaDB (or MySQL) database for an embedded Hive Metastore, schema made up front.

:class:`MariaDbBackend` names the database; :meth:`MariaDbBackend.prepare`
creates the HMS 2.3 schema before the HMS starts, as
:mod:`catalogd.hms.embedded.postgres` does for PostgreSQL: the DDL
DataNucleus SchemaTool writes from the wheel's jars (cached per jar set), plus
``SEQUENCE_TABLE`` and the ``VERSION`` row.

Facts relied on (MariaDB 10.11, MariaDB Connector/J 2.7 from Debian's
``libmariadb-java``, HMS 2.3.10): the driver is told to report itself as MySQL
(``useMysqlMetadata``) so that DataNucleus and HMS's direct SQL pick their
MySQL dialects; the database uses ``utf8mb3`` with a binary collation, because
HMS's 767-character keys are too long for ``utf8mb4`` indexes and HMS names are
case-sensitive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalogd.hms.embedded.schematool import schema_ddl
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError

__all__ = ["MYSQL_EXTRA_DDL", "MariaDbBackend"]

SCHEMA_VERSION = "2.3.0"
_KEY_TOO_LONG = 1071  # MySQL error: specified key was too long
MYSQL_EXTRA_DDL = (
    "CREATE TABLE `SEQUENCE_TABLE` (`SEQUENCE_NAME` varchar(255) NOT NULL PRIMARY KEY, "
    "`NEXT_VAL` bigint NOT NULL)",
    "INSERT INTO `VERSION` (`VER_ID`, `SCHEMA_VERSION`, `VERSION_COMMENT`) "
    f"VALUES (1, '{SCHEMA_VERSION}', 'Hive release version {SCHEMA_VERSION}')",
)


@dataclass(frozen=True)
class MariaDbBackend:
    """A MariaDB/MySQL database for the HMS; created (``utf8mb3``) with its schema if absent.

    ``driver_jar`` is the MariaDB JDBC driver (Debian: libmariadb-java). Creating
    the schema needs the ``pymysql`` package (the ``[mysql]`` extra).
    """

    database: str
    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str = ""
    driver_jar: Path = Path("/usr/share/java/mariadb-java-client.jar")

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:mysql://{self.host}:{self.port}/{self.database}?useMysqlMetadata=true"

    @property
    def sqlalchemy_url(self) -> str:
        """The same database for SQLAlchemy (``--hms-db``)."""
        auth = f"{self.user}:{self.password}" if self.password else self.user
        return f"mysql+pymysql://{auth}@{self.host}:{self.port}/{self.database}?charset=utf8mb3"

    def properties(self, data_dir: Path) -> dict[str, str]:
        """Return the hive-site.xml properties selecting this database."""
        return {
            "javax.jdo.option.ConnectionURL": self.jdbc_url,
            "javax.jdo.option.ConnectionDriverName": "org.mariadb.jdbc.Driver",
            "javax.jdo.option.ConnectionUserName": self.user,
            "javax.jdo.option.ConnectionPassword": self.password,
            "datanucleus.schema.autoCreateAll": "false",
            "hive.metastore.schema.verification": "true",
        }

    def _connect(self) -> Any:
        """A pymysql connection (autocommit) with the database created (``utf8mb3``) if absent.

        Raises MetastoreUnavailableError (MariaDB unreachable) or InvalidRequestError
        (pymysql is not installed).
        """
        try:
            import pymysql
        except ImportError as exc:
            raise InvalidRequestError(
                "a MariaDB-backed embedded metastore needs pymysql: pip install pymysql"
            ) from exc
        try:
            conn = pymysql.connect(
                host=self.host, port=self.port, user=self.user, password=self.password,
                autocommit=True, connect_timeout=10,
            )  # fmt: skip
            with conn.cursor() as cur:
                cur.execute(
                    f"CREATE DATABASE IF NOT EXISTS `{self.database}` "
                    "CHARACTER SET utf8mb3 COLLATE utf8mb3_bin"
                )
                cur.execute(f"USE `{self.database}`")
        except pymysql.MySQLError as exc:
            raise MetastoreUnavailableError(f"cannot reach {self._where}: {exc}") from exc
        return conn

    @property
    def _where(self) -> str:
        return f"MariaDB database {self.database!r} at {self.host}:{self.port}"

    def ensure_database(self) -> bool:
        """Create the database if absent; return whether it has an HMS schema (VERSION)."""
        import pymysql

        conn = self._connect()
        try:
            with conn, conn.cursor() as cur:
                cur.execute("SHOW TABLES LIKE 'VERSION'")
                return cur.fetchone() is not None
        except pymysql.MySQLError as exc:
            raise MetastoreUnavailableError(f"cannot read {self._where}: {exc}") from exc

    def prepare(
        self, *, java: str, work_dir: Path, cache_dir: Path | None, timeout_s: float
    ) -> bool:
        """Create the database and the HMS 2.3 schema unless a VERSION table exists.

        Blocking. Returns True if it created the schema. Raises
        MetastoreUnavailableError if MariaDB or SchemaTool fails, and
        InvalidRequestError if pymysql is not installed.
        """
        if not self.driver_jar.is_file():
            raise MetastoreUnavailableError(
                f"no MariaDB JDBC driver at {self.driver_jar}; "
                "run .ci/install-system-deps (Debian package libmariadb-java)"
            )
        if self.ensure_database():
            return False
        import pymysql

        try:
            conn = self._connect()
            with conn, conn.cursor() as cur:
                ddl = self._schema_ddl(java, work_dir, cache_dir, timeout_s)
                for statement in [*_statements(_fit_row_size(ddl)), *MYSQL_EXTRA_DDL]:
                    try:
                        cur.execute(statement)
                    except pymysql.OperationalError as exc:
                        # Two column-privilege lookup indexes exceed utf8mb3's key length;
                        # they only speed up lookups (Hive's own MySQL schema is latin1).
                        if exc.args[0] != _KEY_TOO_LONG or not statement.startswith("CREATE INDEX"):
                            raise
        except pymysql.MySQLError as exc:
            raise MetastoreUnavailableError(
                f"cannot create the HMS schema in {self._where}: {exc}"
            ) from exc
        return True

    def _schema_ddl(
        self, java: str, work_dir: Path, cache_dir: Path | None, timeout_s: float
    ) -> str:
        """The HMS DDL for MySQL, from the cache or made by SchemaTool (~3-5 s)."""
        settings = {
            **self.properties(work_dir),
            "datanucleus.storeManagerType": "rdbms",
            "datanucleus.identifierFactory": "datanucleus1",
            "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
        }
        return schema_ddl(
            "mysql",
            properties="".join(f"{k}={v}\n" for k, v in settings.items()),
            driver_jar=self.driver_jar,
            java=java,
            work_dir=work_dir,
            cache_dir=cache_dir,
            timeout_s=timeout_s,
        )


def _fit_row_size(ddl: str) -> str:
    """``VARCHAR`` s too long for MySQL (``TYPE_NAME``, ``PARAM_VALUE``: 32672) as
    ``MEDIUMTEXT``, as Hive's own MySQL schema has them."""
    return re.sub(r"VARCHAR\((\d+)\)", lambda m: "MEDIUMTEXT" if int(m[1]) > 16000 else m[0], ddl)


def _statements(ddl: str) -> list[str]:
    """Split SchemaTool's DDL (``;``-terminated statements, ``--`` comments)."""
    lines = [line for line in ddl.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
