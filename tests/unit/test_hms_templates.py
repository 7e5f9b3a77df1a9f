"""The deploy/hms templates: the checked-in copies equal what the harness renders.

Pure: rendering needs no Java, no database and no Hive Metastore.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from catalogd.hms import listener
from catalogd.hms.embedded import deploy_templates, main

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_HMS = ROOT / "deploy" / "hms"
STALE = "deploy/hms/{} is stale: python -m catalogd.hms.embedded --write-templates deploy/hms"


def test_deploy_templates_are_generated_from_the_harness() -> None:
    files = deploy_templates()
    for name, text in files.items():
        assert (DEPLOY_HMS / name).read_text() == text, STALE.format(name)


def test_the_listener_source_is_packaged_and_deployed() -> None:
    source = listener.listener_source()
    assert (DEPLOY_HMS / listener.SOURCE_NAME).read_text() == source, STALE.format(
        listener.SOURCE_NAME
    )
    for name in (listener.LISTENER_CLASS, listener.STORE_CLASS):
        assert name.rpartition(".")[2].split("$")[-1] in source


def test_write_templates_writes_the_checked_in_files(tmp_path: Path) -> None:
    assert main(["--write-templates", str(tmp_path / "hms")]) == 0
    written = sorted(p.name for p in (tmp_path / "hms").iterdir())
    assert written == sorted(deploy_templates())
    for name in written:
        assert (tmp_path / "hms" / name).read_text() == (DEPLOY_HMS / name).read_text()


def test_python_dash_m_writes_the_templates(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "catalogd.hms.embedded", "--write-templates", str(tmp_path)],
        check=True,
        cwd=ROOT,
        timeout=60,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(deploy_templates())
