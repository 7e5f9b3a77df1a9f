"""Key files, exposure rules and the security settings: pure checks and local files only."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import zmq.auth

from catalogd.admin.cli import format_status
from catalogd.cli import main
from catalogd.config import Config, ConfigError, ListenConfig, load_config, render
from catalogd.security.keys import (
    ServerKeys,
    check_secret_file,
    generate,
    load_directory,
    load_server_keys,
)
from catalogd.security.policy import exposure, is_loopback
from catalogd.security.runtime import Security
from subscriber.curve import client_keys, load_certificate
from subscriber.protocol.errors import InvalidRequestError

pytestmark = pytest.mark.timeout(30)
NOWHERE = Path("/nonexistent/catalogd.toml")


def test_generate_writes_a_standard_pair_with_a_private_secret(tmp_path: Path) -> None:
    public, secret = generate("alice", tmp_path)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o644
    pub, sec = zmq.auth.load_certificate(secret)
    assert zmq.auth.load_certificate(public) == (pub, None)
    assert load_server_keys(secret).public == pub
    assert sec.decode() not in repr(load_server_keys(secret))
    with pytest.raises(ConfigError, match="exists already"):
        generate("alice", tmp_path)


def test_the_cli_generates_keys_and_prints_paths_not_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "spark-etl", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    _, secret = zmq.auth.load_certificate(tmp_path / "spark-etl.key_secret")
    assert str(tmp_path / "spark-etl.key") in out and secret.decode() not in out


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o611])
def test_a_secret_others_can_reach_is_refused(tmp_path: Path, mode: int) -> None:
    _, secret = generate("server", tmp_path)
    secret.chmod(mode)
    with pytest.raises(ConfigError, match=f"chmod 600 {secret}"):
        check_secret_file(secret)


def test_a_key_directory_names_keys_by_file_and_ignores_the_rest(tmp_path: Path) -> None:
    generate("alice", tmp_path)
    (tmp_path / "notes.key").write_text("not a certificate")
    public, _ = zmq.auth.load_certificate(tmp_path / "alice.key")
    assert load_directory(tmp_path) == {public: "alice"}
    with pytest.raises(ConfigError, match="does not exist"):
        load_directory(tmp_path / "missing")


def test_client_keys_take_paths_or_z85_and_never_show_the_secret(tmp_path: Path) -> None:
    generate("server", tmp_path)
    generate("alice", tmp_path)
    by_path = client_keys(tmp_path / "server.key", tmp_path / "alice.key_secret")
    server_public, _ = zmq.auth.load_certificate(tmp_path / "server.key")
    by_value = client_keys(server_public.decode(), by_path.secret.decode())
    assert by_value == by_path
    assert by_path.secret.decode() not in repr(by_path)
    with pytest.raises(InvalidRequestError, match="no secret key"):
        client_keys(tmp_path / "server.key", tmp_path / "alice.key")
    with pytest.raises(InvalidRequestError, match="cannot read"):
        client_keys(tmp_path / "missing.key", tmp_path / "alice.key_secret")


@pytest.mark.parametrize(
    ("endpoint", "loopback"),
    [
        ("tcp://127.0.0.1:26500", True),
        ("tcp://127.8.9.10:1", True),
        ("tcp://localhost:26500", True),
        ("tcp://[::1]:26500", True),
        ("tcp://0.0.0.0:26500", False),
        ("tcp://*:26500", False),
        ("tcp://10.1.2.3:26500", False),
        ("tcp://catalogd.example.com:26500", False),
    ],
)
def test_loopback_is_decided_by_address_and_names_count_as_exposed(
    endpoint: str, loopback: bool
) -> None:
    assert is_loopback(endpoint) is loopback


def test_exposure_needs_keys_or_insecure_which_is_warned_about() -> None:
    local = ["tcp://127.0.0.1:26500", "", "tcp://127.0.0.1:26502"]
    exposed = ["tcp://0.0.0.0:26500", "", "tcp://127.0.0.1:26502"]
    assert exposure(local, keys=False, insecure=False) is None
    assert exposure(exposed, keys=True, insecure=False) is None
    with pytest.raises(ConfigError, match="--insecure") as caught:
        exposure(exposed, keys=False, insecure=False)
    assert "--server-key" in str(caught.value) and "0.0.0.0" in str(caught.value)
    warning = exposure(exposed, keys=False, insecure=True)
    assert warning is not None and warning.startswith("INSECURE")


def test_security_settings_come_in_threes_and_insecure_parses_as_a_bool() -> None:
    with pytest.raises(ConfigError, match="give all three or none"):
        load_config(None, {}, {"security.server_key": "/k"}, default_path=NOWHERE)
    config, sources = load_config(
        None, {"CATALOGD_SERVER_INSECURE": "yes"}, {}, default_path=NOWHERE
    )
    assert config.server.insecure is True and not config.security.enabled
    assert "insecure = true  # env CATALOGD_SERVER_INSECURE" in render(config, sources)
    with pytest.raises(ConfigError, match="server.insecure"):
        load_config(None, {"CATALOGD_SERVER_INSECURE": "maybe"}, {}, default_path=NOWHERE)


def test_insecure_exposure_is_shown_in_status_and_plain_loopback_needs_nothing() -> None:
    exposed = Config(server=ListenConfig(bind="tcp://0.0.0.0:26500", insecure=True))
    status = Security.open(exposed).status()
    assert status["mode"] == "insecure" and status["warning"].startswith("INSECURE")
    text = format_status({"security": status})
    assert "security" in text and "WARNING: INSECURE" in text
    assert Security.open(Config()).status() == {"mode": "plain (loopback only)", "warning": None}
    with pytest.raises(ConfigError, match="--insecure"):
        Security.open(Config(server=ListenConfig(admin_bind="tcp://10.0.0.1:26502")))


def test_a_bad_database_url_is_reported_without_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(
            None, {"CATALOGD_STATE_URL": "postgresql://u:hunter2@h/db x"}, {}, default_path=NOWHERE
        )
    assert "hunter2" not in str(caught.value) and "***" in str(caught.value)


def test_a_key_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    generate("alice", tmp_path)
    tmp_path.chmod(0o777)
    with pytest.raises(ConfigError, match="chmod go-w"):
        load_directory(tmp_path)
    tmp_path.chmod(0o755)
    (tmp_path / "alice.key").chmod(0o666)
    with pytest.raises(ConfigError, match="writable by other users"):
        load_directory(tmp_path)


def test_one_certificate_reader_serves_client_and_server(tmp_path: Path) -> None:
    public_file, secret_file = generate("server", tmp_path)
    public, secret = load_certificate(secret_file, need_secret=True)
    assert load_certificate(public_file) == (public, None)
    assert load_server_keys(secret_file) == ServerKeys(public=public, secret=secret or b"")
    with pytest.raises(InvalidRequestError, match="holds no secret key"):
        load_certificate(public_file, need_secret=True)
    junk = tmp_path / "junk.key_secret"
    junk.write_text("not a certificate")
    junk.chmod(0o600)
    with pytest.raises(ConfigError, match=f"cannot read a CURVE certificate from {junk}"):
        load_server_keys(junk)
    public_only = public_file.rename(tmp_path / "public-only.key_secret")
    public_only.chmod(0o600)
    with pytest.raises(ConfigError, match="holds no secret key"):
        load_server_keys(public_only)
