"""The daemon's configuration: one typed, validated, frozen value built once at start.

Sources, lowest precedence first; each key takes its value from the highest one
that sets it:

1. built-in defaults (the dataclass defaults in :mod:`catalogd.config_schema`);
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
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from catalogd.config_schema import (  # noqa: F401 - re-exported: callers import them from here
    _BOOLS,
    CONFIG_ENV,
    DEFAULT_PATH,
    DETECTION_MODES,
    ENV_PREFIX,
    KEYS,
    LEVELS,
    Config,
    ConfigError,
    DetectorConfig,
    FilesConfig,
    HaConfig,
    HmsConfig,
    Key,
    ListenConfig,
    LoaderConfig,
    LogConfig,
    MetricsConfig,
    SecurityConfig,
    StateConfig,
    WebConfig,
)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["Config", "ConfigError", "KEYS", "Key", "load_config", "render", "diff"]

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
