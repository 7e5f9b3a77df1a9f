"""The configuration as a user meets it: `catalogd config show` and start-up errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from catalogd.addresses import free_port

pytestmark = pytest.mark.timeout(120)


def catalogd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CATALOGD_")}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "catalogd.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )


def test_config_show_names_the_source_of_each_value(tmp_path: Path) -> None:
    config = tmp_path / "catalogd.toml"
    config.write_text(
        '[server]\nbind = "tcp://127.0.0.1:4000"\nheartbeat_interval_s = 2.0\n'
        "[detector]\npoll_interval_s = 9.0\n"
    )
    result = catalogd(
        "config",
        "show",
        "--config",
        str(config),
        "--poll-interval",
        "3",
        env={"CATALOGD_SERVER_HEARTBEAT_INTERVAL_S": "0.5"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f'bind = "tcp://127.0.0.1:4000"  # file {config}' in out  # file beats default
    assert "heartbeat_interval_s = 0.5  # env CATALOGD_SERVER_HEARTBEAT_INTERVAL_S" in out
    assert "poll_interval_s = 3.0  # flag --poll-interval" in out  # flag beats file
    assert 'admin_bind = "tcp://127.0.0.1:26502"  # default' in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[server\nbind = 1\n", "line"),  # TOML syntax error
        ("[server]\nbnid = 'tcp://127.0.0.1:1'\n", "server.bnid"),  # unknown key
        ("[server]\nheartbeat_interval_s = 'often'\n", "server.heartbeat_interval_s"),  # wrong type
        ("[detector]\npoll_interval_s = -1\n", "detector.poll_interval_s"),  # impossible value
        ("[hms]\nuris = ['http://x']\n", "hms.uris"),  # malformed address
    ],
)
def test_a_bad_file_stops_start_up_naming_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    result = catalogd("serve", "--config", str(config))
    assert result.returncode == 2
    assert str(config) in result.stderr and expected in result.stderr


def test_a_bad_environment_variable_is_named() -> None:
    result = catalogd("config", "show", env={"CATALOGD_LOADER_POOL_SIZE": "many"})
    assert result.returncode == 2 and "CATALOGD_LOADER_POOL_SIZE" in result.stderr


def test_help_names_every_command_and_the_exit_codes() -> None:
    top = catalogd("--help")
    assert top.returncode == 0
    for command in ("dump", "serve", "config", "admin"):
        assert command in top.stdout
    assert "exit codes" in top.stdout and "catalogd admin --help" in top.stdout
    admin = catalogd("admin", "--help")
    assert admin.returncode == 0
    for command in ("status", "invalidate", "refresh", "cache-pool", "audit"):
        assert command in admin.stdout
    assert "before or after ADMIN_COMMAND" in admin.stdout and "7 busy" in admin.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "--timeout", "0.3", "status"],
        ["status", "--json", "--timeout", "0.3"],
        ["refresh", "db.t", "--json", "--timeout", "0.3"],
    ],
)
def test_admin_options_go_before_or_after_the_command(args: list[str]) -> None:
    # Nothing listens there: parsed fine, then "unreachable" (3), not bad usage (2).
    result = catalogd("admin", "--endpoint", f"tcp://127.0.0.1:{free_port()}", *args)
    assert result.returncode == 3, result.stderr
    assert "unavailable" in result.stderr and "unrecognized" not in result.stderr
