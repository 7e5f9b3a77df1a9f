"""The daemon's configuration: one typed, validated, frozen value built once at start.

Sources, lowest precedence first; each key takes its value from the highest one
that sets it:

1. built-in defaults (the dataclass defaults below);
2. a TOML file: the ``path`` given (``--config``), else ``$CATALOGD_CONFIG``, else
   ``/etc/catalogd/catalogd.toml`` when that file exists;
3. environment variables ``CATALOGD_<SECTION>_<KEY>``: the dotted key upper-cased
   with dots as underscores (``server.bind`` -> ``CATALOGD_SERVER_BIND``,
   ``data_dir`` -> ``CATALOGD_DATA_DIR``). Values are text, parsed as the key's type;
   lists are comma-separated (``CATALOGD_HMS_URIS=thrift://a:9083,thrift://b:9083``);
   an empty string means "unset" where a key may be unset. An unknown
   ``CATALOGD_*`` variable is an error;
4. command-line flags, passed in already parsed, keyed by dotted key (:data:`KEYS`
   names the flag of each key, used in messages).

Every key, its variable and flag: :data:`KEYS`, ``catalogd config show`` and the
commented example ``deploy/catalogd.toml``. Any bad input raises :class:`ConfigError`
naming its source (file, variable or flag), the key and what was expected. Only this
module looks at the environment, and only at the mapping it is given.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from catalogd.admin.endpoint import DEFAULT_ADMIN_PORT
from catalogd.metastore.client import parse_metastore_uri
from catalogd.server.thread import DEFAULT_PORT
from subscriber.protocol.errors import InvalidRequestError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["Config", "ConfigError", "KEYS", "Key", "load_config", "render", "diff"]

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
    db_url: str = ""  # the HMS backing database, read directly (catalogd.metastore.sql)


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


@dataclass(frozen=True)
class DetectorConfig:
    mode: str = "auto"  # auto: HMS notification events when the HMS logs them, else polling
    poll_interval_s: float = 5.0
    poll_max_calls_per_s: float = 100.0
    privileges_poll_interval_s: float = 60.0


@dataclass(frozen=True)
class FilesConfig:
    tables: tuple[str, ...] = ()  # databases or db.table names that carry file metadata
    max_listings_per_interval: int = 1000  # directory listings per detection interval


@dataclass(frozen=True)
class LogConfig:
    level: str = "INFO"
    format: str = "text"


@dataclass(frozen=True)
class MetricsConfig:
    bind: str | None = None  # "host:port" serves /metrics; None: off


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


# -- value checks: typed value in, normalized value out, ValueError when impossible

_HOST = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.*-]+)"
_ZMQ_TCP = re.compile(rf"tcp://{_HOST}:(\*|\d{{1,5}})")
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
        return value

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


_SECONDS = "a number of seconds > 0"
_ZMQ = "a ZeroMQ address tcp://HOST:PORT (PORT 1-65535 or *)"
_HMS = "Hive Metastore URIs like thrift://host:9083 (none: embedded HMS)"
_HMS_DB = (
    "a SQLAlchemy URL of the HMS database like postgresql+psycopg://reader@host/metastore, "
    'or "" to read HMS over Thrift'
)
_DB = 'a SQLAlchemy URL like postgresql+psycopg://user@host/db, or "" for SQLite in data_dir'
DETECTION_MODES = ("auto", "events", "poll", "off")
_DETECTION = "one of " + ", ".join(f'"{mode}"' for mode in DETECTION_MODES)
_METRICS = 'HOST:PORT (PORT 0-65535, 0 picks a free one), or "" for no metrics'
# fmt: off
KEYS: tuple[Key, ...] = (
    Key("data_dir", str, _path, "a directory path", "--data-dir"),
    Key("hms.uris", tuple, _uris, _HMS, "--hms"),
    Key("hms.timeout_s", float, _positive, _SECONDS, "--hms-timeout"),
    Key("hms.retries", int, _count(0, 100), "an integer from 0 to 100", "--hms-retries"),
    Key("hms.db_url", str, _db_url, _HMS_DB, "--hms-db"),
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
    Key("detector.mode", str, _one_of(*DETECTION_MODES), _DETECTION, "--change-detection"),
    Key("detector.poll_interval_s", float, _positive, _SECONDS, "--poll-interval", live=True),
    Key("detector.poll_max_calls_per_s", float, _positive, "a number > 0",
        "--poll-max-calls-per-s"),
    Key("detector.privileges_poll_interval_s", float, _positive, _SECONDS,
        "--privileges-poll-interval", live=True),
    Key("files.tables", tuple, _names, "database or db.table names", "--file-metadata"),
    Key("files.max_listings_per_interval", int, _count(1, 10_000_000),
        "an integer from 1 to 10000000", "--file-listings-per-interval"),
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
)
# fmt: on
_BY_NAME = {key.name: key for key in KEYS}
_BY_ENV = {key.env: key for key in KEYS}


# -- reading each source


def _typed(key: Key, raw: Any, *, text: bool) -> Any:
    """``raw`` as ``key.kind``: parsed when it is text (env, some flags), else type-checked."""
    if text and key.kind is not str:
        word = raw.strip()
        if key.kind is tuple:
            return tuple(part.strip() for part in word.split(",") if part.strip())
        if key.kind in (int, float):
            return key.kind(word)  # ValueError when not a number
        if key.kind is bool and word.lower() in _BOOLS:
            return _BOOLS[word.lower()]
        raise ValueError
    if isinstance(raw, Path) and key.kind is str:
        return str(raw)
    if key.kind is tuple and isinstance(raw, (list, tuple)):
        if all(isinstance(item, str) for item in raw):
            return tuple(raw)
        raise ValueError
    if key.kind is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if type(raw) is key.kind:  # exact: bool is an int, but not a valid count
        return raw
    raise ValueError


def _set(values: dict[str, Any], key: Key, raw: Any, where: str, *, text: bool) -> None:
    try:
        values[key.name] = key.check(_typed(key, raw, text=text))
    except ValueError as exc:
        shown = mask_password(raw) if isinstance(raw, str) else raw  # never echo a password
        raise ConfigError(f"{where}: {key.name}: expected {key.expected}, got {shown!r}") from exc


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _read_file(path: Path) -> dict[str, Any]:
    where = f"config file {path}"
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from exc


def _apply_file(values: dict[str, Any], sources: dict[str, str], path: Path) -> None:
    where = f"config file {path}"
    sections = sorted({name.partition(".")[0] for name in _BY_NAME if "." in name})
    for name, value in _read_file(path).items():
        if isinstance(value, dict) and name not in sections:
            hint = _suggest(name, sections)
            raise ConfigError(f"{where}: unknown section [{name}]{hint}")
        if name in sections:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {name}: expected a table [{name}], got {value!r}")
            items = [(f"{name}.{sub}", sub_value) for sub, sub_value in value.items()]
        else:
            items = [(name, value)]
        for dotted, raw in items:
            key = _BY_NAME.get(dotted)
            if key is None:
                hint = _suggest(dotted, list(_BY_NAME))
                if dotted.rpartition(".")[2] in _BY_NAME:
                    hint = f" ({dotted.rpartition('.')[2]} is a top-level key: put it first)"
                raise ConfigError(f"{where}: unknown key {dotted!r}{hint}")
            if isinstance(raw, dict):
                raise ConfigError(f"{where}: {dotted}: expected {key.expected}, got a table")
            _set(values, key, raw, where, text=False)
            sources[dotted] = f"file {path}"


def _apply_env(values: dict[str, Any], sources: dict[str, str], environ: Mapping[str, str]) -> None:
    for var in sorted(environ):
        if not var.startswith(ENV_PREFIX) or var == CONFIG_ENV:
            continue
        key = _BY_ENV.get(var)
        if key is None:
            hint = _suggest(var, [*_BY_ENV, CONFIG_ENV])
            raise ConfigError(f"environment variable {var}: no such setting{hint}")
        _set(values, key, environ[var], f"environment variable {var}", text=True)
        sources[key.name] = f"env {var}"


def _apply_flags(values: dict[str, Any], sources: dict[str, str], flags: Mapping[str, Any]) -> None:
    for name, raw in flags.items():
        if raw is None:  # not given on the command line
            continue
        key = _BY_NAME.get(name)
        if key is None:
            raise ConfigError(f"flags: unknown configuration key {name!r}")
        _set(values, key, raw, f"flag {key.flag}", text=isinstance(raw, str))
        sources[name] = f"flag {key.flag}"


def _flatten(config: Config) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for field in fields(config):
        value = getattr(config, field.name)
        if is_dataclass(value):
            for sub in fields(value):
                flat[f"{field.name}.{sub.name}"] = getattr(value, sub.name)
        else:
            flat[field.name] = value
    return flat


def _build(flat: Mapping[str, Any]) -> Config:
    parts: dict[str, Any] = {}
    for field in fields(Config):
        default = getattr(Config(), field.name)
        if is_dataclass(default):
            changes = {sub.name: flat[f"{field.name}.{sub.name}"] for sub in fields(default)}
            parts[field.name] = replace(default, **changes)  # type: ignore[type-var]
        else:
            parts[field.name] = flat[field.name]
    return Config(**parts)


def load_config(
    path: str | Path | None,
    environ: Mapping[str, str],
    flags: Mapping[str, Any],
    *,
    default_path: Path = DEFAULT_PATH,
) -> tuple[Config, dict[str, str]]:
    """Resolve the configuration from every source, once.

    Args:
        path: the TOML file to read (``--config``); None: ``$CATALOGD_CONFIG`` from
            ``environ``, else ``default_path`` if that file exists, else no file.
        environ: the process environment (pass ``os.environ``); only ``CATALOGD_*``
            variables are looked at.
        flags: command-line values by dotted key (``{"server.bind": "tcp://..."}``);
            None values (flags not given) are skipped. Text is parsed like the
            environment; other values (Path, float, list) are type-checked.

    Returns:
        ``(config, sources)``: ``sources`` maps every dotted key to where its value
        came from: ``"default"``, ``"file PATH"``, ``"env VAR"`` or ``"flag --x"``.

    Raises:
        ConfigError: an unreadable or invalid file, an unknown key or variable, a
            value of the wrong type or out of range. Blocking: reads one file.
    """
    values = _flatten(Config())
    sources = dict.fromkeys(values, "default")
    if path is None and environ.get(CONFIG_ENV):
        path = environ[CONFIG_ENV]
    if path is not None:
        _apply_file(values, sources, Path(path))
    elif default_path.is_file():
        _apply_file(values, sources, default_path)
    _apply_env(values, sources, environ)
    _apply_flags(values, sources, flags)
    names = ("server_key", "subscriber_keys", "admin_keys")
    security = [values[f"security.{name}"] for name in names]
    if any(security) and not all(security):
        raise ConfigError(
            "security.server_key (--server-key), security.subscriber_keys (--subscriber-keys) "
            "and security.admin_keys (--admin-keys) go together: give all three or none"
        )
    if not values["state.url"]:
        values["state.url"] = f"sqlite:///{values['data_dir'] / 'state.db'}"
        sources["state.url"] += " (SQLite file in data_dir)"
    return _build(values), sources


def _toml_value(value: Any) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    # JSON strings are TOML basic strings once DEL is escaped too.
    return json.dumps(str(value)).replace("\x7f", "\\u007f")


_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:)([^@]*)(@)")


def mask_password(value: str) -> str:
    """A database URL with its password shown as ``***`` (as SQLAlchemy prints it)."""
    return _URL_PASSWORD.sub(r"\1***\3", value)


def render(config: Config, sources: Mapping[str, str]) -> str:
    """The configuration as TOML (it parses back), each value followed by its source.

    Passwords in database URLs are masked (``***``), as the daemon's log does.
    """
    lines = ["# catalogd configuration in effect; after each value, where it came from"]
    section = ""
    for name, value in _flatten(config).items():
        head, _, leaf = name.rpartition(".")
        if head != section:
            lines += ["", f"[{head}]"]
            section = head
        shown = mask_password(value) if isinstance(value, str) else value
        lines.append(f"{leaf} = {_toml_value(shown)}  # {sources.get(name, 'default')}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ConfigDiff:
    """Keys whose value differs between two configurations, split by how to apply them."""

    live: tuple[str, ...]
    restart: tuple[str, ...]


def diff(old: Config, new: Config) -> ConfigDiff:
    """What a reload changes: ``live`` keys apply at once, ``restart`` keys need a restart."""
    before, after = _flatten(old), _flatten(new)
    changed = [name for name in before if before[name] != after[name]]
    return ConfigDiff(
        live=tuple(name for name in changed if _BY_NAME[name].live),
        restart=tuple(name for name in changed if not _BY_NAME[name].live),
    )
