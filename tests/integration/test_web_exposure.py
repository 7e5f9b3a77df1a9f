"""The web page's exposure rule end to end: ``catalogd serve`` refuses a non-loopback
``--web-bind`` without TLS and tokens before starting anything; with them (HTTPS on
all interfaces, a self-signed certificate made by ``openssl``), a request without a
token gets 401, a ``read`` token sees the pages but may not change a log level (403),
an ``admin`` token may."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.web_catalog import FakeSources, build

from catalogd.addresses import free_port
from catalogd.core.catalog import Catalog
from catalogd.web.access import Access, load_tokens
from catalogd.web.app import make_app
from catalogd.web.server import WebServer

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
READ, ADMIN = "read-token-0123456789", "admin-token-0123456789"


def test_non_loopback_web_bind_without_tls_and_tokens_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "none.toml").write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "catalogd.cli", "serve", "--data-dir", str(tmp_path)]
        + ["--web-bind", f"0.0.0.0:{free_port()}", "--config", str(tmp_path / "none.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CATALOGD_CONFIG": ""},
    )
    assert result.returncode == 2, result.stderr
    for words in ("web status page", "--web-tokens", "--web-tls-cert", "--insecure"):
        assert words in result.stderr
    assert not (tmp_path / "hms").exists()  # refused before anything started


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_https_with_tokens(tmp_path: Path) -> None:

    cert, key = tmp_path / "web.crt", tmp_path / "web.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
         "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    tokens = tmp_path / "tokens"
    tokens.write_text(f"viewer read {READ}\nops admin {ADMIN}\n")
    tokens.chmod(0o600)
    catalog: Catalog = build(partitions=5, small_tables=1)
    access = Access(load_tokens(tokens), loopback=False)
    server = WebServer(
        make_app(FakeSources(catalog), access), "0.0.0.0:0", tls_cert=cert, tls_key=key
    ).start()
    context = ssl.create_default_context(cafile=str(cert))
    base = f"https://127.0.0.1:{server.port}"

    def status(path: str, token: str | None = None, data: bytes | None = None) -> int:
        request = urllib.request.Request(base + path, data=data)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        assert server.url.startswith("https://")
        assert status("/") == 401
        assert status("/catalog/sales/orders") == 401
        assert status("/readyz") == 200  # probes need no token
        assert status("/catalog/sales/orders", READ) == 200
        form = b"logger=catalogd.web.exposure&level=ERROR"
        assert status("/log_level", READ, form) == 403
        assert status("/log_level", ADMIN, form) == 200
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # no plain HTTP
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5)
    finally:
        server.close()
