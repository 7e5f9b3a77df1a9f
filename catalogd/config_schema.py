"""What can be configured: the typed sections of :class:`Config` and the key table.

Each :class:`Key` names one setting: its dotted name, environment variable, flag,
type, parser (which checks the value and says what was expected) and whether a
SIGHUP reload applies it live. :data:`KEYS` lists every key once; the loader
(:mod:`catalogd.config`), ``catalogd config show``, the CLI flags and
``deploy/catalogd.toml`` are all built from it. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalogd.addresses import (
    DEFAULT_ADMIN_PORT,
    DEFAULT_EMBEDDED_HMS_PORT,
    DEFAULT_PORT,
    DEFAULT_WEB_PORT,
    parse_metastore_uri,
)
from subscriber.protocol.errors import InvalidRequestError

DEFAULT_PATH = Path("/etc/catalogd/catalogd.toml")
ENV_PREFIX = "CATALOGD_"
CONFIG_ENV = "CATALOGD_CONFIG"


class ConfigError(InvalidRequestError):
    """The configuration cannot be used; the message names the source, key and expectation."""


@dataclass(frozen=True)
class HmsConfig:
    uris: tuple[str, ...] = ()  # empty: start the embedded HMS in data_dir/hms
    timeout_s: float = 60.0
    retries: int = 3
    db_url: str = ""  # the HMS backing database, read directly (catalogd.sources.sql)
    embedded_port: int = DEFAULT_EMBEDDED_HMS_PORT  # the embedded HMS's port; 0: a free one
    # Which Hive Metastore the embedded one runs (catalogd.hms.embedded.releases).
    embedded_version: str = "2.3"


@dataclass(frozen=True)
class ListenConfig:
    bind: str = f"tcp://127.0.0.1:{DEFAULT_PORT}"
    pub_bind: str | None = None  # None: the bind host, next port
    admin_bind: str = f"tcp://127.0.0.1:{DEFAULT_ADMIN_PORT}"
    advertise_host: str | None = None  # None: the host each subscriber connected to
    heartbeat_interval_s: float = 1.0
    insecure: bool = False  # allow a non-loopback bind without keys (warned about)


@dataclass(frozen=True)
class SecurityConfig:
    """CURVE keys (catalogd.security); all three or none. Paths, never key material."""

    server_key: Path | None = None  # the server's secret certificate file (mode 0600)
    subscriber_keys: Path | None = None  # directory of public keys allowed to subscribe
    admin_keys: Path | None = None  # directory of public keys allowed to run admin commands

    @property
    def enabled(self) -> bool:
        return self.server_key is not None


@dataclass(frozen=True)
class StateConfig:
    url: str = ""  # load_config resolves "" to a SQLite file in data_dir


@dataclass(frozen=True)
class LoaderConfig:
    pool_size: int = 4
    processes: int = 2  # load worker processes with hms.db_url (catalogd.loading.workers)


@dataclass(frozen=True)
class DetectorConfig:
    mode: str = "auto"  # auto: HMS notification events when the HMS logs them, else polling
    poll_interval_s: float = 5.0
    poll_max_calls_per_s: float = 100.0
    privileges_poll_interval_s: float = 60.0
    table_order_max_tables: int = 1000  # 0: do not learn HMS's row order of tables


@dataclass(frozen=True)
class FilesConfig:
    tables: tuple[str, ...] = ()  # databases or db.table names that carry file metadata
    max_listings_per_interval: int = 1000  # directory listings per detection interval
    spark_listing_threshold: int = 1_000_000  # expected files above which a Spark job lists


@dataclass(frozen=True)
class LogConfig:
    level: str = "INFO"
    format: str = "text"


@dataclass(frozen=True)
class MetricsConfig:
    bind: str | None = None  # "host:port" serves /metrics; None: off


@dataclass(frozen=True)
class WebConfig:
    """The web status page (catalogd.web). Non-loopback needs ``tls_cert``, ``tls_key``
    and ``tokens`` (or ``server.insecure``)."""

    bind: str | None = f"127.0.0.1:{DEFAULT_WEB_PORT}"  # None: off
    tls_cert: Path | None = None  # PEM certificate chain: serve HTTPS
    tls_key: Path | None = None  # its PEM private key (mode 0600)
    tokens: Path | None = None  # file of "NAME ROLE TOKEN" lines (ROLE: read or admin)


@dataclass(frozen=True)
class HaConfig:
    enabled: bool = False  # active/standby through a lease in the (shared) state store
    lease_s: float = 3.0
    renew_interval_s: float = 1.0
    advertise: str | None = None  # subscriber endpoint others reach; None: server.bind
    advertise_admin: str | None = None  # admin endpoint others reach; None: admin_bind


@dataclass(frozen=True)
class Config:
    """The effective configuration. Build it with :func:`load_config`."""

    data_dir: Path = Path("data")
    hms: HmsConfig = HmsConfig()
    server: ListenConfig = ListenConfig()
    state: StateConfig = StateConfig()
    loader: LoaderConfig = LoaderConfig()
    detector: DetectorConfig = DetectorConfig()
    files: FilesConfig = FilesConfig()
    log: LogConfig = LogConfig()
    metrics: MetricsConfig = MetricsConfig()
    security: SecurityConfig = SecurityConfig()
    ha: HaConfig = HaConfig()
    web: WebConfig = WebConfig()


# -- value checks: typed value in, normalized value out, ValueError when impossible

_HOST = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.*-]+)"
_ZMQ_TCP = re.compile(rf"(?:tcp://)?{_HOST}:(\*|\d{{1,5}})")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
_DB_URL = re.compile(r"[A-Za-z][A-Za-z0-9]*(\+[A-Za-z0-9_]+)?://\S*")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _positive(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError
    return value


def _count(low: int, high: int) -> Callable[[int], int]:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError
        return value

    return check


def _uris(value: tuple[str, ...]) -> tuple[str, ...]:
    for uri in value:
        try:
            parse_metastore_uri(uri)
        except InvalidRequestError as exc:
            raise ValueError from exc
    return value


def _names(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not name or name.count(".") > 1 for name in value):
        raise ValueError
    return tuple(name.lower() for name in value)


def _zmq(optional: bool) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        if optional and value == "":
            return None
        match = _ZMQ_TCP.fullmatch(value)
        if not match or (match.group(2) != "*" and not 0 < int(match.group(2)) < 65536):
            raise ValueError
        return value if value.startswith("tcp://") else f"tcp://{value}"  # HOST:PORT too

    return check


def _host(value: str) -> str | None:
    if value and (re.search(r"[\s/]", value) or "://" in value):
        raise ValueError
    return value or None


def _path(value: str) -> Path:
    if not value.strip():
        raise ValueError
    return Path(value)


def _optional_path(value: str) -> Path | None:
    return Path(value) if value.strip() else None


def _db_url(value: str) -> str:
    if value and not _DB_URL.fullmatch(value):
        raise ValueError
    return value


def _level(value: str) -> str:
    if value.upper() not in LEVELS:
        raise ValueError
    return value.upper()


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise ValueError
        return value

    return check


def _metrics_bind(value: str) -> str | None:
    match = _HOST_PORT.fullmatch(value)
    if value and (not match or int(match.group(2)) > 65535):
        raise ValueError
    return value or None


def _web_bind(value: str) -> str | None:
    if value in ("", "off"):
        return None
    return _metrics_bind(value)


@dataclass(frozen=True)
class Key:
    """One configuration key: its spellings in each source and what it accepts.

    ``kind`` is the Python type of the value before ``check`` normalizes it
    (``tuple`` means a tuple of strings). ``live`` keys can change on reload
    (SIGHUP) without a restart.
    """

    name: str
    kind: type
    check: Callable[[Any], Any]
    expected: str
    flag: str
    live: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.replace(".", "_").upper()

    @property
    def metavar(self) -> str:
        """The flag's placeholder in ``--help`` (``URI``, ``DIR``, ``SECONDS``...)."""
        return (
            _METAVARS.get(self.name)
            or _METAVARS.get(self.expected)
            or ("N" if self.kind is int else "VALUE")
        )


_SECONDS = "a number of seconds > 0"
_ZMQ = "a ZeroMQ address tcp://HOST:PORT or HOST:PORT (PORT 1-65535 or *)"
_HMS = "Hive Metastore URIs like thrift://host:9083 (none: embedded HMS)"
_HMS_DB = (
    "a SQLAlchemy URL of the HMS database like postgresql+psycopg://reader@host/metastore, "
    'or "" to read HMS over Thrift'
)
_DB = 'a SQLAlchemy URL like postgresql+psycopg://user@host/db, or "" for SQLite in data_dir'
DETECTION_MODES = ("auto", "events", "poll", "off")
# The embedded HMS versions (catalogd.hms.embedded.releases.VERSIONS; a test keeps them equal).
EMBEDDED_HMS_VERSIONS = ("2.3", "3.1", "4.x")
_EMBEDDED_VERSION = (
    '"2.3" (the pyspark wheel\'s jars), "3.1" or "4.x" (Apache Hive 3.1.3 / 4.0.1, '
    "fetched from Maven Central by make system)"
)
_DETECTION = "one of " + ", ".join(f'"{mode}"' for mode in DETECTION_MODES)
_METRICS = 'HOST:PORT (PORT 0-65535, 0 picks a free one), or "" for no metrics'
_WEB = 'HOST:PORT (PORT 0-65535, 0 picks a free one), or "off"'
_METAVARS = {
    _WEB: "HOST:PORT",
    _SECONDS: "SECONDS",
    _ZMQ: "URI",
    _ZMQ + ' or ""': "URI",
    _HMS: "URI",
    _HMS_DB: "URL",
    _DB: "URL",
    _DETECTION: "MODE",
    _METRICS: "HOST:PORT",
    "data_dir": "DIR",
    "hms.embedded_port": "PORT",
    _EMBEDDED_VERSION: "VERSION",
    "server.advertise_host": "HOST",
    "detector.poll_max_calls_per_s": "RATE",
    "files.tables": "DB[.TABLE],...",
    "log.level": "LEVEL",
    "log.format": "FORMAT",
    "security.server_key": "FILE",
    "security.subscriber_keys": "DIR",
    "security.admin_keys": "DIR",
    "web.tls_cert": "FILE",
    "web.tls_key": "FILE",
    "web.tokens": "FILE",
}
# fmt: off
KEYS: tuple[Key, ...] = (
    Key("data_dir", str, _path, "a directory path", "--data-dir"),
    Key("hms.uris", tuple, _uris, _HMS, "--hms"),
    Key("hms.timeout_s", float, _positive, _SECONDS, "--hms-timeout"),
    Key("hms.retries", int, _count(0, 100), "an integer from 0 to 100", "--hms-retries"),
    Key("hms.db_url", str, _db_url, _HMS_DB, "--hms-db"),
    Key("hms.embedded_port", int, _count(0, 65535),
        "a port from 1 to 65535 (taken: a free one, warned about), or 0 for a free one",
        "--embedded-hms-port"),
    Key("hms.embedded_version", str, _one_of(*EMBEDDED_HMS_VERSIONS), _EMBEDDED_VERSION,
        "--embedded-hms-version"),
    Key("server.bind", str, _zmq(False), _ZMQ, "--bind"),
    Key("server.pub_bind", str, _zmq(True), _ZMQ + ' or ""', "--pub-bind"),
    Key("server.admin_bind", str, _zmq(False), _ZMQ, "--admin-bind"),
    Key("server.advertise_host", str, _host, 'a host name or IP address, or ""',
        "--advertise-host"),
    Key("server.heartbeat_interval_s", float, _positive, _SECONDS, "--heartbeat-interval",
        live=True),
    Key("server.insecure", bool, bool, "true or false", "--insecure"),
    Key("state.url", str, _db_url, _DB, "--state-db"),
    Key("loader.pool_size", int, _count(1, 256), "an integer from 1 to 256",
        "--loader-pool-size"),
    Key("loader.processes", int, _count(0, 64), "an integer from 0 to 64",
        "--load-processes"),
    Key("detector.mode", str, _one_of(*DETECTION_MODES), _DETECTION, "--change-detection"),
    Key("detector.poll_interval_s", float, _positive, _SECONDS, "--poll-interval", live=True),
    Key("detector.poll_max_calls_per_s", float, _positive, "a number > 0",
        "--poll-max-calls-per-s"),
    Key("detector.privileges_poll_interval_s", float, _positive, _SECONDS,
        "--privileges-poll-interval", live=True),
    Key("detector.table_order_max_tables", int, _count(0, 100_000),
        "an integer from 0 to 100000", "--table-order-max-tables"),
    Key("files.tables", tuple, _names, "database or db.table names", "--file-metadata"),
    Key("files.max_listings_per_interval", int, _count(1, 10_000_000),
        "an integer from 1 to 10000000", "--file-listings-per-interval"),
    Key("files.spark_listing_threshold", int, _count(0, 1_000_000_000),
        "an integer from 0 to 1000000000", "--spark-listing-threshold"),
    Key("log.level", str, _level, "one of " + ", ".join(LEVELS), "--log-level", live=True),
    Key("log.format", str, _one_of("text", "json"), '"text" or "json"', "--log-format",
        live=True),
    Key("metrics.bind", str, _metrics_bind, _METRICS, "--metrics-bind"),
    Key("security.server_key", str, _optional_path, 'a secret key file, or "" for none',
        "--server-key"),
    Key("security.subscriber_keys", str, _optional_path,
        'a directory of subscriber public keys, or ""', "--subscriber-keys"),
    Key("security.admin_keys", str, _optional_path, 'a directory of admin public keys, or ""',
        "--admin-keys"),
    Key("ha.enabled", bool, bool, "true or false", "--ha"),
    Key("ha.lease_s", float, _positive, _SECONDS, "--ha-lease"),
    Key("ha.renew_interval_s", float, _positive, _SECONDS, "--ha-renew-interval"),
    Key("ha.advertise", str, _zmq(True), _ZMQ + ' or ""', "--ha-advertise"),
    Key("ha.advertise_admin", str, _zmq(True), _ZMQ + ' or ""', "--ha-advertise-admin"),
    Key("web.bind", str, _web_bind, _WEB, "--web-bind"),
    Key("web.tls_cert", str, _optional_path, 'a PEM certificate file, or ""', "--web-tls-cert"),
    Key("web.tls_key", str, _optional_path, 'a PEM private key file, or ""', "--web-tls-key"),
    Key("web.tokens", str, _optional_path, 'a file of "NAME ROLE TOKEN" lines, or ""',
        "--web-tokens"),
)
# fmt: on
