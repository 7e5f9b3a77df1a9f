"""The SQL source's schema layouts: which columns each HMS schema version has, the
default catalog's databases, the version check (on an in-memory SQLite database
holding a ``VERSION`` table; the queries over real HMS schemas are tested in
``tests/integration/test_sql_source.py`` and ``test_hms_versions_backends.py``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from catalogd.sources.sql import schema as s
from subscriber.protocol.errors import MetastoreError


def names(columns: list[sa.Column]) -> set[str]:  # type: ignore[type-arg]
    return {c.name for c in columns}


def test_each_version_reads_the_columns_it_has() -> None:
    v2, v3, v4 = (s.Layout(v) for v in ("2.3.0", "3.1.0", "4.0.0"))
    assert [v2.generation, v3.generation, v4.generation] == [2, 3, 4]
    added3 = {"CTLG_NAME"}
    added4 = {"CREATE_TIME", "DB_MANAGED_LOCATION_URI", "TYPE", "DATACONNECTOR_NAME"}
    assert not names(v2.columns(s.DBS)) & (added3 | added4)
    assert added3 <= names(v3.columns(s.DBS)) and not added4 & names(v3.columns(s.DBS))
    assert added3 | added4 <= names(v4.columns(s.DBS))
    assert "OWNER_TYPE" in names(v3.columns(s.TBLS)) - names(v2.columns(s.TBLS))
    assert "WRITE_ID" in names(v4.columns(s.TBLS)) - names(v3.columns(s.TBLS))
    assert "WRITE_ID" in names(v4.columns(s.PARTITIONS)) - names(v3.columns(s.PARTITIONS))
    assert "ENGINE" in names(v4.columns(s.TAB_COL_STATS)) - names(v3.columns(s.TAB_COL_STATS))
    for privs in (s.GLOBAL_PRIVS, s.DB_PRIVS, s.TBL_PRIVS, s.PART_COL_PRIVS):
        assert "AUTHORIZER" in names(v3.columns(privs)) - names(v2.columns(privs))
    # Declared order is kept (rows are read by position in places).
    assert [c.name for c in v2.columns(s.TBLS)][:3] == ["TBL_ID", "CREATE_TIME", "DB_ID"]


def test_databases_are_the_default_catalogs_from_3_on() -> None:
    def sql(layout: s.Layout) -> str:
        return str(sa.select(layout.dbs.c.NAME).compile(compile_kwargs={"literal_binds": True}))

    assert "CTLG_NAME" not in sql(s.Layout("2.3.0"))
    assert "\"CTLG_NAME\" = 'hive'" in sql(s.Layout("3.1.0"))
    assert "\"CTLG_NAME\" = 'spark'" in sql(s.Layout("4.0.0", catalog="spark"))


@pytest.fixture
def sqlite() -> sa.engine.Engine:
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        s.VERSION.create(conn)
    return engine


@pytest.mark.parametrize("version", ["2.3.0", "3.1.0", "4.0.0"])
def test_the_layout_is_read_once_per_connection(sqlite: sa.engine.Engine, version: str) -> None:
    with sqlite.begin() as conn:
        conn.execute(sa.insert(s.VERSION).values(VER_ID=1, SCHEMA_VERSION=version))
    with sqlite.connect() as conn:
        layout = s.layout_of(conn)
        assert layout == s.Layout(version)
        conn.execute(sa.update(s.VERSION).values(SCHEMA_VERSION="9.9.9"))
        assert s.layout_of(conn) is layout  # kept with the connection


def test_unknown_and_missing_versions_are_refused(sqlite: sa.engine.Engine) -> None:
    with sqlite.connect() as conn:
        with pytest.raises(MetastoreError, match="empty VERSION table"):
            s.layout_of(conn, "db X")
        conn.execute(sa.insert(s.VERSION).values(VER_ID=1, SCHEMA_VERSION="3.0.0"))
        with pytest.raises(
            MetastoreError, match=r"db X holds .* 3\.0\.0.*2\.3\.0, 3\.1\.0, 4\.0\.0"
        ):
            s.layout_of(conn, "db X")
        assert "catalogd_hms_layout" not in conn.info  # nothing kept: asked again next time
