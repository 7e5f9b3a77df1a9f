"""Both installs from a clean virtual environment, as a user does them.

* ``pip install catalogd`` (the daemon): the ``catalogd`` command runs and every
  daemon module imports with nothing else installed; ``serve`` on the embedded HMS
  says it needs the ``[spark]`` extra (the jars of the pyspark wheel).
* the subscriber alone, for Spark drivers: ``pip install pyzmq thriftpy2`` then
  ``pip install --no-deps catalogd``; it must sync from a real catalogd with
  neither SQLAlchemy nor PySpark present, and its ``catalogd serve`` says what to
  install instead of a ModuleNotFoundError traceback.

The project is built into a wheel once, as a release would be. The venvs fetch
the dependencies from the package index, so these tests need it (about a
minute in all); they are in their own tier so a machine without the index can
deselect them with ``-m "not install"``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalogd.addresses import free_port
from catalogd.server.thread import CatalogServer, ServerConfig

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.install, pytest.mark.timeout(600)]


def _run(*args: str | Path, cwd: Path | None = None, timeout: float = 300) -> str:
    done = _try(*args, cwd=cwd, timeout=timeout)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _try(
    *args: str | Path, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("CATALOGD_")
        },
    )


def _serve(bin_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``catalogd serve`` on the embedded default, on free ports."""
    return _try(
        bin_dir / "catalogd",
        "serve",
        "--data-dir",
        tmp_path / "data",
        "--bind",
        f"tcp://127.0.0.1:{free_port()}",
        "--pub-bind",
        "tcp://127.0.0.1:*",
        "--admin-bind",
        f"tcp://127.0.0.1:{free_port()}",
        "--web-bind",
        "127.0.0.1:0",
        cwd=tmp_path,
        timeout=60,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the tracked files, so the build leaves nothing in the checkout.
    src = out / "src"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        target = src / name.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name.decode(), target)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, src)
    (built,) = out.glob("catalogd-*.whl")
    return built


def _venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin"


def test_daemon_install_gives_a_daemon_that_runs(wheel: Path, tmp_path: Path) -> None:
    bin_dir = _venv(tmp_path / "daemon")
    _run(bin_dir / "pip", "install", "-q", wheel)
    assert "serve" in _run(bin_dir / "catalogd", "--help")
    shown = _run(bin_dir / "catalogd", "config", "show", cwd=tmp_path)
    assert "[hms]" in shown and "data_dir" in shown
    # Every module of the daemon imports: nothing hides in an extra.
    _run(
        bin_dir / "python",
        "-c",
        "import pkgutil, importlib, catalogd\n"
        "for m in pkgutil.walk_packages(catalogd.__path__, 'catalogd.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n",
        cwd=tmp_path,
    )
    # The embedded HMS (the default) runs from the pyspark jars: the [spark] extra.
    refused = _serve(bin_dir, tmp_path)
    assert refused.returncode == 3, refused.stderr
    assert "pip install 'catalogd[spark]'" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    srv = CatalogServer(
        ServerConfig(bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*")
    ).start()
    srv.commit({"DATABASE:sales": b"db", "TABLE:sales.orders": b"t"}).result(10)
    yield srv
    srv.close()


def test_subscriber_installs_with_pyzmq_and_thriftpy2_only(
    wheel: Path, tmp_path: Path, server: CatalogServer
) -> None:
    bin_dir = _venv(tmp_path / "driver")
    _run(bin_dir / "pip", "install", "-q", "pyzmq", "thriftpy2")
    _run(bin_dir / "pip", "install", "-q", "--no-deps", wheel)
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        for name in ("sqlalchemy", "pyspark", "prometheus_client", "sdnotify", "uvicorn",
                     "starlette", "jinja2"):
            assert importlib.util.find_spec(name) is None, name + " is installed"
        from subscriber import CatalogSubscriber, NotFoundError, read_table
        with CatalogSubscriber({server.endpoint!r}) as sub:
            sub.wait_synced(30)
            print(sub.version, sorted(sub.list_databases()))
        assert not any(m.startswith("catalogd") for m in sys.modules)
        """
    )
    out = _run(bin_dir / "python", "-c", script, cwd=tmp_path)
    assert "['sales']" in out
    # The catalogd command exists here too; serve says what to install, no traceback.
    refused = _serve(bin_dir, tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert "needs the daemon's dependencies" in refused.stderr
    assert "pip install catalogd (not --no-deps)" in refused.stderr
    assert "Traceback" not in refused.stderr
