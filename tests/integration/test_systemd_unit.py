"""``systemd-analyze verify`` accepts deploy/catalogd.service (with a real ExecStart binary)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "catalogd.service"
INSTALLED = "ExecStart=/usr/bin/catalogd "

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze missing: run .ci/install-system-deps",
)


def verify(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    # systemd-analyze checks that ExecStart= exists: point it at this venv's catalogd.
    catalogd = Path(sys.executable).parent / "catalogd"
    assert catalogd.exists(), "install the project (pip install -e .) first"
    unit = tmp_path / "catalogd.service"
    unit.write_text(text.replace(INSTALLED, f"ExecStart={catalogd} "))
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unit_verifies_cleanly(tmp_path: Path) -> None:
    text = UNIT.read_text()
    assert INSTALLED + "serve --config /etc/catalogd/catalogd.toml\n" in text
    result = verify(tmp_path, text)
    # Directives systemd cannot use are warnings with exit status 0: demand silence.
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")


@pytest.mark.parametrize(
    "directive",
    ["Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "WatchdogSec=", "Restart=on-failure",
     "DynamicUser=yes", "StateDirectory=catalogd", "ProtectSystem=strict", "NoNewPrivileges=yes",
     "PrivateTmp=yes", "ProtectHome=yes", "TimeoutStopSec="],
)  # fmt: skip
def test_unit_has_the_required_directives(directive: str) -> None:
    lines = UNIT.read_text().splitlines()
    assert any(line.startswith(directive) for line in lines), directive


def test_verify_would_catch_a_mistake(tmp_path: Path) -> None:
    """The silence above means something: a misspelt directive is reported."""
    result = verify(tmp_path, UNIT.read_text().replace("WatchdogSec=", "WatchdogSecs="))
    assert "WatchdogSecs" in result.stderr
