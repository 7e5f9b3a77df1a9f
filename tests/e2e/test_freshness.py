"""Spark DDL reaches subscribers with no admin command: change detection by polling.

(HMS notification events need a listener on the HMS classpath; the events mode
is tested where the embedded HMS runs with catalogd's listener.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.catalogd_process import CatalogdProcess
from support.ddl_scenario import POLL_INTERVAL, run_ddl_scenario
from support.measurements import record_measurement

from catalogd.hms.embedded import EmbeddedMetastore
from subscriber.api import CatalogSubscriber

pytestmark = [pytest.mark.hms, pytest.mark.spark, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def polling_catalogd(
    hms: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CatalogdProcess]:
    proc = CatalogdProcess(
        hms.uri,
        tmp_path_factory.mktemp("catalogd-poll"),
        extra=["--change-detection", "poll", "--poll-interval", str(POLL_INTERVAL)],
    ).start()
    proc.wait_loaded()
    yield proc
    proc.stop()


def test_spark_ddl_of_each_kind_reaches_subscribers(
    spark: Any, polling_catalogd: CatalogdProcess
) -> None:
    with CatalogSubscriber(polling_catalogd.endpoint) as sub:
        sub.wait_synced(30)
        _, times = run_ddl_scenario(spark.sql, sub)
    for name, seconds in times.items():
        record_measurement(f"poll: {name} visible", seconds, "s")
