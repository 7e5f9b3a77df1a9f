"""Which Hive Metastore an embedded HMS runs: 2.3 (the pyspark wheel), 3.1 or 4.x (Maven).

:data:`VERSIONS` are the choices (``hms.embedded_version``); :data:`RELEASES` says,
for the two that come from Maven Central, what is fetched and how it runs, and
:func:`installed` finds a fetched release (:mod:`.fetch` fetches it) or says
what to run. Pure apart from looking at files.

A fetched release lives in ``ROOT/hms-<hive version>/`` (``ROOT`` is
``~/.cache/catalogd`` unless given): ``dist/`` is the release's own binary
distribution (``-bin.tar.gz``: its ``lib/`` and the schematool scripts in
``scripts/metastore/upgrade/<db>``), ``extra/`` what that distribution expects
from the host (Hadoop, ``hadoop-common`` and ``hdfs-client`` of the version Hive
was built with; for 3.1 also the stock ``DbNotificationListener``), and ``READY``
is written last.

Facts relied on (read in the jars and on Maven Central, 2026-11):

* 4.x is **4.0.1**: ``hive-standalone-metastore-server`` 4.1.0 and 4.2.x are not
  on Maven Central (its ``maven-metadata.xml`` lists 4.0.0 and 4.0.1 only).
* The server (``org.apache.hadoop.hive.metastore.HiveMetaStore``) and schematool
  (3.1: ``...metastore.tools.MetastoreSchemaTool``, 4.0: ``...tools.schematool.
  MetastoreSchemaTool``) run from ``dist/lib`` plus Hadoop; 4.0.1's ``lib`` also
  bundles MySQL and PostgreSQL drivers, left off the class path (the backend's
  driver is used, as for 2.3).
* ``DbNotificationListener`` is in no standalone-metastore jar; it is
  ``org.apache.hive.hcatalog.listener.DbNotificationListener`` in
  ``hive-hcatalog-server-extensions``, whose 3.1.3 class needs only metastore,
  Hadoop and slf4j classes. No 4.0.x build of that artifact is on Maven Central
  (4.2.0's is Java 21 bytecode and needs 4.2 classes), so the embedded 4.x HMS
  logs no notification events and catalogd polls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from subscriber.protocol.errors import MetastoreUnavailableError

__all__ = [
    "DEFAULT_VERSION",
    "HCATALOG_LISTENER",
    "RELEASES",
    "VERSIONS",
    "HmsVersion",
    "Installed",
    "Release",
    "default_root",
    "installed",
    "release_for",
]

HmsVersion = Literal["2.3", "3.1", "4.x"]
VERSIONS: tuple[HmsVersion, ...] = ("2.3", "3.1", "4.x")
DEFAULT_VERSION: HmsVersion = "2.3"
HCATALOG_LISTENER = "org.apache.hive.hcatalog.listener.DbNotificationListener"


@dataclass(frozen=True)
class Release:
    """A Hive Metastore release fetched from Maven Central."""

    version: HmsVersion
    hive: str  # the release, e.g. 3.1.3
    distribution: str  # groupId:artifactId:version:type:classifier of its -bin.tar.gz
    hadoop: str  # the Hadoop version Hive was built with
    schema_tool: str  # main class of its schematool
    schema_version: str  # what its schematool writes into VERSION
    listener_artifact: str | None  # groupId:artifactId:version holding DbNotificationListener
    listener_class: str | None
    bind_host_key: str | None  # hive-site key of the Thrift bind host (None: none in it)

    @property
    def directory_name(self) -> str:
        return f"hms-{self.hive}"


RELEASES: dict[str, Release] = {
    "3.1": Release(
        version="3.1",
        hive="3.1.3",
        distribution="org.apache.hive:hive-standalone-metastore:3.1.3:tar.gz:bin",
        hadoop="3.1.0",
        schema_tool="org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
        schema_version="3.1.0",
        listener_artifact="org.apache.hive.hcatalog:hive-hcatalog-server-extensions:3.1.3",
        listener_class=HCATALOG_LISTENER,
        bind_host_key=None,
    ),
    "4.x": Release(
        version="4.x",
        hive="4.0.1",
        distribution="org.apache.hive:hive-standalone-metastore-server:4.0.1:tar.gz:bin",
        hadoop="3.3.6",
        schema_tool="org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool",
        schema_version="4.0.0",
        listener_artifact=None,
        listener_class=None,
        bind_host_key="hive.metastore.thrift.bind.host",
    ),
}

# JDBC drivers some distributions bundle; the backend names its own driver jar.
_DRIVERS = ("mysql-connector-", "postgresql-", "mariadb-java-client-")


@dataclass(frozen=True)
class Installed:
    """A fetched release: where its distribution is and the class path it runs with."""

    release: Release
    home: Path  # the distribution (METASTORE_HOME: bin/, lib/, scripts/)
    jars: tuple[Path, ...]  # class path: the distribution's lib, then Hadoop (and listener)

    @property
    def scripts(self) -> Path:
        return self.home / "scripts" / "metastore" / "upgrade"


def default_root() -> Path:
    """``~/.cache/catalogd``: where fetched releases live unless told otherwise."""
    return Path.home() / ".cache" / "catalogd"


def release_for(version: str) -> Release:
    """The :class:`Release` of ``"3.1"`` or ``"4.x"``; MetastoreUnavailableError otherwise."""
    if version not in RELEASES:
        raise MetastoreUnavailableError(
            f"no Maven release for embedded HMS version {version!r} "
            f"(one of {', '.join(VERSIONS)}; 2.3 runs from the pyspark wheel)"
        )
    return RELEASES[version]


def installed(version: str, root: Path | None = None) -> Installed:
    """The fetched release of ``version`` under ``root`` (default :func:`default_root`).

    Raises MetastoreUnavailableError naming what to fetch and how when it is missing.
    """
    release = release_for(version)
    base = (root or default_root()) / release.directory_name
    homes = sorted((base / "dist").glob("apache-hive-metastore-*-bin"))
    if not (base / "READY").is_file() or not homes:
        listener = f", {release.listener_artifact}" if release.listener_artifact else ""
        raise MetastoreUnavailableError(
            f"the embedded Hive Metastore {version} (Apache Hive {release.hive}) is not "
            f"fetched: run `make system` or `python -m catalogd.hms.embedded --fetch "
            f"{version}` (needs mvn and Maven Central: {release.distribution}, Hadoop "
            f"{release.hadoop}{listener}); looked in {base}"
        )
    home = homes[-1]
    lib = [p for p in sorted((home / "lib").glob("*.jar")) if not p.name.startswith(_DRIVERS)]
    extra = sorted((base / "extra").glob("*.jar"))
    return Installed(release=release, home=home, jars=(*lib, *extra))
