"""Nothing logged forges a line or goes binary; ``config show`` masks database passwords."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from catalogd import logs
from catalogd.config import load_config, mask_password, render


def test_control_characters_are_escaped_visibly() -> None:
    assert logs.escape("a\nb\rc\td\x00e\x1bf\x7fg\u2028h\\i") == (
        "a\\nb\\rc\\td\\x00e\\x1bf\\x7fg\\u2028h\\\\i"
    )
    assert logs.escape("plain café.t1") == "plain café.t1"


def test_a_name_cannot_forge_a_text_log_line_but_tracebacks_keep_theirs() -> None:
    buf = io.StringIO()
    handler = logs.configure(stream=buf, timestamps=False)
    try:
        log = logging.getLogger("catalogd.test")
        log.info("refreshed %s", "db.t\nINFO catalogd: forged", extra={"by": "eve\x00"})
        try:
            raise ValueError("x")
        except ValueError:
            log.exception("failed %s", "a\rb")
    finally:
        logging.getLogger().removeHandler(handler)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "INFO catalogd.test: refreshed db.t\\nINFO catalogd: forged by=eve\\x00"
    assert lines[1] == "ERROR catalogd.test: failed a\\rb"
    assert lines[2].startswith("Traceback") and "\x00" not in buf.getvalue()


def test_json_lines_stay_one_line() -> None:
    buf = io.StringIO()
    handler = logs.configure(stream=buf, fmt="json")
    try:
        logging.getLogger("catalogd.test").warning("x\ny\x00", extra={"who": "a\nb"})
    finally:
        logging.getLogger().removeHandler(handler)
    assert buf.getvalue().count("\n") == 1 and "\x00" not in buf.getvalue()


def test_config_show_masks_database_passwords(tmp_path: Path) -> None:
    env = {
        "CATALOGD_STATE_URL": "postgresql+psycopg://cat:s3cret@db.example:5432/state",
        "CATALOGD_DATA_DIR": str(tmp_path),
    }
    config, sources = load_config(None, env, {}, default_path=tmp_path / "absent.toml")
    shown = render(config, sources)
    assert "s3cret" not in shown
    assert "postgresql+psycopg://cat:***@db.example:5432/state" in shown
    assert mask_password("sqlite:////x/state.db") == "sqlite:////x/state.db"
    assert mask_password("mysql+pymysql://root@h/db") == "mysql+pymysql://root@h/db"
