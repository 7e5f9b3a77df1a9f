"""The daemon's configuration: precedence of sources, errors that say what is wrong, rendering."""

from __future__ import annotations

import dataclasses
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from catalogd import config as cfg
from catalogd.config import KEYS, Config, ConfigError, diff, load_config, render
from subscriber.protocol.errors import InvalidRequestError

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "catalogd.toml"


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """A default config path that does not exist, so /etc never leaks into a test."""
    return tmp_path / "absent.toml"


def write(tmp_path: Path, text: str, name: str = "catalogd.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(
    path: Path | None = None,
    env: dict[str, str] | None = None,
    flags: dict[str, Any] | None = None,
    *,
    default_path: Path,
) -> tuple[Config, dict[str, str]]:
    return load_config(path, env or {}, flags or {}, default_path=default_path)


def test_defaults_only(nowhere: Path) -> None:
    config, sources = load(default_path=nowhere)
    assert dataclasses.replace(config, state=cfg.StateConfig()) == Config()
    assert config.state.url == "sqlite:///data/state.db"
    assert sources["state.url"].startswith("default")
    assert {v for k, v in sources.items() if k != "state.url"} == {"default"}
    assert set(sources) == {key.name for key in KEYS}


# key, file value (TOML text), env text, flag value, and the typed value each gives
LEVELS = [
    ("server.bind", '"tcp://127.0.0.1:7001"', "tcp://127.0.0.1:7002", "tcp://127.0.0.1:7003",
     ("tcp://127.0.0.1:7001", "tcp://127.0.0.1:7002", "tcp://127.0.0.1:7003")),
    ("hms.uris", '["thrift://a:9083"]', "thrift://b:9083,thrift://c:9083", "thrift://d:9083",
     (("thrift://a:9083",), ("thrift://b:9083", "thrift://c:9083"), ("thrift://d:9083",))),
    ("hms.timeout_s", "5", "6.5", 7.0, (5.0, 6.5, 7.0)),
    ("loader.pool_size", "2", "3", 8, (2, 3, 8)),
    ("detector.mode", '"poll"', "events", "off", ("poll", "events", "off")),
    ("data_dir", '"/srv/a"', "/srv/b", Path("/srv/c"), (Path("/srv/a"), Path("/srv/b"),
                                                          Path("/srv/c"))),
    ("log.level", '"debug"', "warning", "ERROR", ("DEBUG", "WARNING", "ERROR")),
]  # fmt: skip


def file_text(key: str, value: str) -> str:
    section, _, leaf = key.rpartition(".")
    return f"[{section}]\n{leaf} = {value}\n" if section else f"{leaf} = {value}\n"


def value_of(config: Config, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("key", "in_file", "in_env", "in_flag", "expected"), LEVELS)
def test_each_level_wins_over_the_one_below(
    tmp_path: Path, nowhere: Path, key: str, in_file: str, in_env: str, in_flag: Any,
    expected: tuple[Any, Any, Any],
) -> None:  # fmt: skip
    path = write(tmp_path, file_text(key, in_file))
    env = {cfg._BY_NAME[key].env: in_env}
    flag = cfg._BY_NAME[key].flag

    config, sources = load(path, default_path=nowhere)
    assert value_of(config, key) == expected[0]
    assert sources[key] == f"file {path}"

    config, sources = load(path, env, default_path=nowhere)
    assert value_of(config, key) == expected[1]
    assert sources[key] == f"env {cfg._BY_NAME[key].env}"

    config, sources = load(path, env, {key: in_flag}, default_path=nowhere)
    assert value_of(config, key) == expected[2]
    assert sources[key] == f"flag {flag}"

    config, sources = load(path, env, {key: None}, default_path=nowhere)  # flag not given
    assert value_of(config, key) == expected[1]


def test_which_file_is_read(tmp_path: Path) -> None:
    default = write(tmp_path, "[loader]\npool_size = 2\n", "default.toml")
    from_env = write(tmp_path, "[loader]\npool_size = 3\n", "env.toml")
    given = write(tmp_path, "[loader]\npool_size = 4\n", "given.toml")
    env = {"CATALOGD_CONFIG": str(from_env)}
    assert load(default_path=default)[0].loader.pool_size == 2
    assert load(env=env, default_path=default)[0].loader.pool_size == 3
    assert load(given, env, default_path=default)[0].loader.pool_size == 4


def test_empty_strings_mean_unset(tmp_path: Path, nowhere: Path) -> None:
    path = write(tmp_path, '[server]\npub_bind = "tcp://127.0.0.1:7010"\n[metrics]\nbind = ""\n')
    env = {"CATALOGD_SERVER_PUB_BIND": "", "CATALOGD_SERVER_ADVERTISE_HOST": ""}
    config, _ = load(path, env, default_path=nowhere)
    assert config.server.advertise_host is None
    assert config.server.pub_bind is None
    assert config.metrics.bind is None
    config, _ = load(env={"CATALOGD_HMS_URIS": ""}, default_path=nowhere)
    assert config.hms.uris == ()


BAD_FILES = [
    ("[server\nbind = 1\n", r"not valid TOML: .*line 1"),
    ("[loader]\npool_size = 4\nbogus == 1\n", r"not valid TOML: .*line 3"),
    ("[server]\nbnd = 1\n", r"unknown key 'server.bnd' \(did you mean 'server.bind'\?\)"),
    ("[servers]\nbind = 1\n", r"unknown section \[servers\] \(did you mean 'server'\?\)"),
    ("[server]\ndata_dir = '/x'\n", r"unknown key 'server.data_dir' \(data_dir is a top-level"),
    ("hms = 3\n", r"hms: expected a table \[hms\], got 3"),
    ('[hms]\ntimeout_s = "10"\n', r"hms.timeout_s: expected a number of seconds > 0, got '10'"),
    ("[hms]\ntimeout_s = -1\n", r"hms.timeout_s: expected a number of seconds > 0, got -1"),
    ("[hms]\ntimeout_s = inf\n", r"hms.timeout_s: expected a number of seconds > 0, got inf"),
    ("[hms]\nretries = true\n", r"hms.retries: expected an integer from 0 to 100, got True"),
    ("[hms]\nretries = 1.5\n", r"hms.retries: expected an integer from 0 to 100, got 1.5"),
    ("[loader]\npool_size = 0\n", r"loader.pool_size: expected an integer from 1 to 256, got 0"),
    ("[detector]\npoll_interval_s = 0\n", r"detector.poll_interval_s: expected a number of sec"),
    ('[detector]\nmode = "push"\n', r'detector.mode: expected one of "auto", "events", "p'),
    ("[detector]\npoll_max_calls_per_s = 0\n", r"detector.poll_max_calls_per_s: expected a n"),
    ('[hms]\nuris = "thrift://h:9083"\n', r"hms.uris: expected Hive Metastore URIs like thrift"),
    ('[hms]\nuris = ["http://h:9083"]\n', r"hms.uris: expected .*got \['http://h:9083'\]"),
    ('[hms]\nuris = ["thrift://h"]\n', r"hms.uris: expected .*got \['thrift://h'\]"),
    (
        '[server]\nbind = "http://127.0.0.1:26500"\n',
        r"server.bind: expected a ZeroMQ address tcp://",
    ),
    ('[server]\nbind = "tcp://127.0.0.1:70000"\n', r"server.bind: expected a ZeroMQ address"),
    ('[server]\nbind = "tcp://127.0.0.1"\n', r"server.bind: expected a ZeroMQ address"),
    ('[server]\npub_bind = "ipc:///tmp/x"\n', r"server.pub_bind: expected a ZeroMQ address"),
    ('[server]\nadvertise_host = "tcp://h"\n', r"server.advertise_host: expected a host name"),
    ('[state]\nurl = "not a url"\n', r"state.url: expected a SQLAlchemy URL"),
    ('[log]\nlevel = "LOUD"\n', r"log.level: expected one of DEBUG, INFO, WARNING, ERROR"),
    ('[log]\nformat = "xml"\n', r'log.format: expected "text" or "json", got \'xml\''),
    ('[metrics]\nbind = "9100"\n', r"metrics.bind: expected HOST:PORT"),
    ('[metrics]\nbind = "h:99999"\n', r"metrics.bind: expected HOST:PORT"),
    ("data_dir = ''\n", r"data_dir: expected a directory path, got ''"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_file_names_file_key_and_expectation(
    tmp_path: Path, nowhere: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(f"config file {path}: ") + message):
        load(path, default_path=nowhere)


def test_unreadable_files(tmp_path: Path, nowhere: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError, match=f"config file {missing}: cannot read it: No such file"):
        load(missing, default_path=nowhere)
    with pytest.raises(ConfigError, match="cannot read it"):
        load(tmp_path, default_path=nowhere)  # a directory
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'data_dir = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=f"config file {latin}: not UTF-8"):
        load(latin, default_path=nowhere)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CATALOGD_HMS_TIMEOUT_S": "soon"}, "environment variable CATALOGD_HMS_TIMEOUT_S: "
         "hms.timeout_s: expected a number of seconds > 0, got 'soon'"),
        ({"CATALOGD_LOADER_POOL_SIZE": "2.0"}, "CATALOGD_LOADER_POOL_SIZE: loader.pool_size: "
         "expected an integer from 1 to 256, got '2.0'"),
        ({"CATALOGD_HMS_URIS": "thrift://a:9083,b:9083"}, "CATALOGD_HMS_URIS: hms.uris"),
        ({"CATALOGD_SERVER_BND": "x"}, "environment variable CATALOGD_SERVER_BND: no such "
         "setting (did you mean 'CATALOGD_SERVER_BIND'?)"),
    ],
)  # fmt: skip
def test_bad_environment(nowhere: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load(env=env, default_path=nowhere)


def test_bad_flags_name_the_flag(nowhere: Path) -> None:
    with pytest.raises(ConfigError, match=r"flag --heartbeat-interval: .*> 0, got -1.0"):
        load(flags={"server.heartbeat_interval_s": -1.0}, default_path=nowhere)
    with pytest.raises(ConfigError, match=r"flag --bind: server.bind: expected a ZeroMQ"):
        load(flags={"server.bind": "localhost"}, default_path=nowhere)
    with pytest.raises(ConfigError, match="unknown configuration key 'server.port'"):
        load(flags={"server.port": 1}, default_path=nowhere)


def test_unrelated_environment_is_ignored(nowhere: Path) -> None:
    config, _ = load(env={"HOME": "/root", "CATALOGDX": "1"}, default_path=nowhere)
    assert config.loader == cfg.LoaderConfig()


def test_config_error_is_an_invalid_request_and_pickles(tmp_path: Path, nowhere: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(write(tmp_path, "[loader]\npool_size = -3\n"), default_path=nowhere)
    assert isinstance(caught.value, InvalidRequestError)  # the CLI exits 2 on these
    copy = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == str(caught.value)


def test_render_shows_sources_and_parses_back(tmp_path: Path, nowhere: Path) -> None:
    path = write(tmp_path, '[log]\nformat = "json"\n[hms]\nuris = ["thrift://h:1"]\n')
    env = {"CATALOGD_LOADER_POOL_SIZE": "9", "CATALOGD_SERVER_ADVERTISE_HOST": 'odd"name'}
    config, sources = load(path, env, {"data_dir": Path("/srv/cat")}, default_path=nowhere)
    text = render(config, sources)
    assert f'format = "json"  # file {path}\n' in text
    assert "pool_size = 9  # env CATALOGD_LOADER_POOL_SIZE\n" in text
    assert 'data_dir = "/srv/cat"  # flag --data-dir\n' in text
    assert 'url = "sqlite:////srv/cat/state.db"  # default (SQLite file in data_dir)\n' in text
    assert "timeout_s = 60.0  # default\n" in text
    again, _ = load(write(tmp_path, text, "rendered.toml"), default_path=nowhere)
    assert again == config


def test_example_file_sets_every_key(nowhere: Path) -> None:
    config, sources = load(EXAMPLE, default_path=nowhere)
    assert all(where.startswith(f"file {EXAMPLE}") for where in sources.values())
    text = EXAMPLE.read_text()
    for key in KEYS:
        assert key.env in text and key.flag in text, key.name
    assert config.data_dir == Path("/var/lib/catalogd")
    # Apart from data_dir, the example shows the built-in defaults.
    defaults, _ = load(flags={"data_dir": "/var/lib/catalogd"}, default_path=nowhere)
    assert config == defaults
    assert cfg.tomllib.loads(text)  # plain TOML, no extensions


def test_keys_cover_every_field_of_config() -> None:
    names = []
    for field in dataclasses.fields(Config):
        default = getattr(Config(), field.name)
        if dataclasses.is_dataclass(default):
            names += [f"{field.name}.{sub.name}" for sub in dataclasses.fields(default)]
        else:
            names.append(field.name)
    assert names == [key.name for key in KEYS]
    assert len({key.env for key in KEYS}) == len(KEYS)
    assert len({key.flag for key in KEYS}) == len(KEYS)


def test_diff_splits_live_and_restart_keys(nowhere: Path) -> None:
    old, _ = load(default_path=nowhere)
    new, _ = load(
        flags={"log.level": "DEBUG", "detector.poll_interval_s": 1.0, "server.bind": "tcp://*:1"},
        default_path=nowhere,
    )
    change = diff(old, new)
    assert change.live == ("detector.poll_interval_s", "log.level")
    assert change.restart == ("server.bind",)
    assert diff(new, new) == cfg.ConfigDiff(live=(), restart=())


def test_config_is_frozen(nowhere: Path) -> None:
    config, _ = load(default_path=nowhere)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.log.level = "DEBUG"  # type: ignore[misc]


def test_a_bind_without_tcp_means_tcp() -> None:
    """The one endpoint convention (subscriber.endpoints): HOST:PORT is tcp://HOST:PORT."""
    config, _ = load_config(None, {}, {"server.bind": "127.0.0.1:26600"})
    assert config.server.bind == "tcp://127.0.0.1:26600"


def test_the_embedded_hms_has_a_stable_default_port() -> None:
    """A sidecar learns the address from the welcome (tests/e2e/test_sidecar_upstream.py)."""
    from catalogd.addresses import DEFAULT_EMBEDDED_HMS_PORT

    config, _ = load_config(None, {}, {})
    assert config.hms.embedded_port == DEFAULT_EMBEDDED_HMS_PORT == 26503


@pytest.mark.parametrize(
    ("bind", "pub"),
    [
        ("tcp://127.0.0.1:26500", "tcp://127.0.0.1:26501"),
        ("tcp://*:26500", "tcp://*:26501"),
        ("tcp://127.0.0.1:*", "tcp://127.0.0.1:*"),
        ("tcp://127.0.0.1:0", "tcp://127.0.0.1:*"),
    ],
)
def test_the_publisher_takes_the_next_port_or_a_free_one_like_the_router(
    bind: str, pub: str
) -> None:
    """A ROUTER on a free port gets its PUB on a free port too: "the port it got + 1"
    may be taken (sync_bench failed to bind so, with other processes running)."""
    from catalogd.addresses import next_port_endpoint

    assert next_port_endpoint(bind) == pub
