"""The files of ``deploy/hms/``: HMS configuration templates for running one by hand.

:func:`deploy_templates` renders them with ``${...}`` placeholders from the same
functions the embedded harness uses, so they cannot drift from what is tested
(``tests/unit/test_hms_templates.py`` compares them with the checked-in copies);
:func:`write_templates` is ``python -m catalogd.hms.embedded --write-templates DIR``.
"""

from __future__ import annotations

from pathlib import Path

from catalogd.hms import listener
from catalogd.hms.embedded.config import (
    DerbyBackend,
    PostgresBackend,
    hive_site_properties,
    render_hive_site,
    render_log4j2,
)
from catalogd.hms.embedded.postgres import POSTGRES_EXTRA_DDL, datanucleus_properties

__all__ = ["deploy_templates", "write_templates"]


def deploy_templates() -> dict[str, str]:
    """Return the files of ``deploy/hms/`` (templates with ``${...}`` placeholders).

    They are rendered from the same functions the harness uses, so they cannot drift;
    a test compares them with the checked-in copies.
    """
    data_dir = Path("${DATA_DIR}")
    postgres = PostgresBackend(
        database="${PG_DATABASE}",
        host="${PG_HOST}",
        port="${PG_PORT}",  # type: ignore[arg-type]
        user="${PG_USER}",
        password="${PG_PASSWORD}",
    )
    warehouse = "file:${DATA_DIR}/warehouse"
    return {
        "hive-site.derby.xml": render_hive_site(
            hive_site_properties(DerbyBackend(), data_dir=data_dir, warehouse_uri=warehouse)
        ),
        "hive-site.postgres.xml": render_hive_site(
            hive_site_properties(postgres, data_dir=data_dir, warehouse_uri=warehouse)
        ),
        "log4j2.properties": render_log4j2("${DATA_DIR}/logs/hms.log"),
        "datanucleus.properties": datanucleus_properties(postgres),
        "postgres-extra.sql": POSTGRES_EXTRA_DDL,
        listener.SOURCE_NAME: listener.listener_source(),
    }


def write_templates(directory: Path) -> None:
    """Write :func:`deploy_templates` into ``directory`` (made if missing), replacing files."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in deploy_templates().items():
        (directory / name).write_text(text)
