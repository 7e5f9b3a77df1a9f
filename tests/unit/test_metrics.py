"""Prometheus metrics: scraped over real HTTP on loopback, values move as the daemon feeds them."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from catalogd.metrics import Metrics
from catalogd.server.thread import ServerStats
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError


@pytest.fixture
def served() -> Iterator[tuple[Metrics, str]]:
    metrics = Metrics(max_subscriber_series=2)
    port = metrics.start_http("127.0.0.1:0")
    assert port > 0
    yield metrics, f"http://127.0.0.1:{port}/metrics"
    metrics.close()


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_catalog_gauges(served: tuple[Metrics, str]) -> None:
    metrics, url = served
    assert scrape(url)[("catalogd_catalog_version", ())] == 0
    metrics.set_catalog(
        version=42,
        objects_by_type={"DATABASE": 2, "TABLE": 7},
        tables_loaded=5,
        tables_not_loaded=2,
        delta_log_floor=10,
    )
    values = scrape(url)
    assert values[("catalogd_catalog_version", ())] == 42
    assert values[("catalogd_objects", (("type", "TABLE"),))] == 7
    assert values[("catalogd_objects", (("type", "DATABASE"),))] == 2
    assert values[("catalogd_tables", (("state", "loaded"),))] == 5
    assert values[("catalogd_tables", (("state", "not_loaded"),))] == 2
    assert values[("catalogd_delta_log_floor_version", ())] == 10


def test_server_counters_follow_snapshots(served: tuple[Metrics, str]) -> None:
    metrics, url = served
    stats = ServerStats(published_messages=3, published_bytes=300, snapshots=1, catch_ups=2)
    metrics.update_from(stats, version=5, now=100.0)
    values = scrape(url)
    assert values[("catalogd_published_messages_total", ())] == 3
    assert values[("catalogd_published_bytes_total", ())] == 300
    assert values[("catalogd_snapshot_requests_total", ())] == 1
    assert values[("catalogd_catch_ups_total", ())] == 2

    stats.published_messages, stats.published_bytes = 10, 1000
    metrics.update_from(stats, version=5, now=101.0)
    values = scrape(url)
    assert values[("catalogd_published_messages_total", ())] == 10
    assert values[("catalogd_published_bytes_total", ())] == 1000
    assert values[("catalogd_snapshot_requests_total", ())] == 1

    # A new server in the same process starts its stats at zero: counters keep rising.
    metrics.update_from(ServerStats(published_messages=4), version=5, now=102.0)
    assert scrape(url)[("catalogd_published_messages_total", ())] == 14


def test_subscriber_lag_keeps_the_laggiest_few(served: tuple[Metrics, str]) -> None:
    metrics, url = served
    stats = ServerStats(subscribers={"a": (100, 50.0), "b": (90, 55.0), "c": (99, 58.0)})
    metrics.update_from(stats, version=100, now=60.0)
    values = scrape(url)
    lag = {k[1][0][1]: v for k, v in values.items() if k[0] == "catalogd_subscriber_lag_versions"}
    assert lag == {"b": 10, "c": 1}  # at most 2 series: "a" is up to date
    assert values[("catalogd_subscriber_report_age_seconds", (("client", "b"),))] == 5
    assert values[("catalogd_subscribers", ())] == 3
    assert values[("catalogd_subscriber_max_lag_versions", ())] == 10

    stats.subscribers = {"a": (100, 61.0)}  # b and c went away
    metrics.update_from(stats, version=120, now=62.0)
    values = scrape(url)
    lag = {k[1][0][1]: v for k, v in values.items() if k[0] == "catalogd_subscriber_lag_versions"}
    assert lag == {"a": 20}
    assert values[("catalogd_subscribers", ())] == 1


def test_hms_loads_and_admin_commands(served: tuple[Metrics, str]) -> None:
    metrics, url = served
    with metrics.hms_call("get_table"):
        pass
    with pytest.raises(MetastoreUnavailableError), metrics.hms_call("get_table"):
        raise MetastoreUnavailableError("thrift://h:9083")
    metrics.observe_hms_call("get_all_databases", 0.02)
    metrics.observe_load("initial", 1.5)
    metrics.count_admin("refresh", "ok")
    metrics.count_admin("refresh", "ok")
    metrics.count_admin("invalidate", "not_found")
    values = scrape(url)
    assert values[("catalogd_hms_calls_total", (("method", "get_table"),))] == 2
    assert values[("catalogd_hms_calls_total", (("method", "get_all_databases"),))] == 1
    errors = (("error", "MetastoreUnavailableError"), ("method", "get_table"))
    assert values[("catalogd_hms_errors_total", errors)] == 1
    assert values[("catalogd_hms_call_seconds_count", (("method", "get_table"),))] == 2
    assert values[("catalogd_load_seconds_count", (("kind", "initial"),))] == 1
    assert values[("catalogd_load_seconds_sum", (("kind", "initial"),))] == 1.5
    ok = (("command", "refresh"), ("outcome", "ok"))
    assert values[("catalogd_admin_commands_total", ok)] == 2
    not_found = (("command", "invalidate"), ("outcome", "not_found"))
    assert values[("catalogd_admin_commands_total", not_found)] == 1


def test_registries_are_private() -> None:
    first, second = Metrics(), Metrics()  # no "duplicated timeseries" error
    first.count_admin("status", "ok")
    assert (
        second.registry.get_sample_value(
            "catalogd_admin_commands_total", {"command": "status", "outcome": "ok"}
        )
        is None
    )


def test_endpoint_lifecycle() -> None:
    metrics = Metrics()
    with pytest.raises(InvalidRequestError, match="HOST:PORT"):
        metrics.start_http("9100")
    port = metrics.start_http("127.0.0.1:0")
    with pytest.raises(InvalidRequestError, match="already serving"):
        metrics.start_http("127.0.0.1:0")
    url = f"http://127.0.0.1:{port}/metrics"
    assert ("catalogd_catalog_version", ()) in scrape(url)
    metrics.close()
    metrics.close()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
