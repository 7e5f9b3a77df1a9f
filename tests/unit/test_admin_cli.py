"""``catalogd admin``: option parsing, the request it builds, how answers print (no server)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import pytest

import idl
from catalogd.admin import cli as admin_cli
from catalogd.admin.cli import request_fields
from catalogd.admin.output import duration, format_status
from catalogd.cli import build_parser
from subscriber.protocol.errors import InvalidRequestError

svc = idl.catalog_service


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["admin", *argv])


# -- shared options before or after the command -------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["refresh", "db.t", "--json"],
        ["--json", "refresh", "db.t"],
        ["refresh", "--json", "db.t"],
    ],
)
def test_json_is_accepted_before_or_after_the_command(argv: list[str]) -> None:
    args = parse(*argv)
    assert args.json is True and args.admin_command == "refresh" and args.target == "db.t"


def test_defaults_when_no_shared_option_is_given() -> None:
    args = parse("status")
    assert args.json is False
    assert args.endpoint == "tcp://127.0.0.1:26502"
    assert args.timeout == 60.0


def test_every_shared_option_after_the_command() -> None:
    args = parse("status", "--json", "--timeout", "5", "--endpoint", "tcp://h:1")
    assert (args.json, args.timeout, args.endpoint) == (True, 5.0, "tcp://h:1")


def test_an_option_before_the_command_survives_the_command_parser() -> None:
    args = parse("--endpoint", "tcp://h:1", "--timeout", "9", "invalidate", "db")
    assert (args.endpoint, args.timeout, args.json) == ("tcp://h:1", 9.0, False)


def test_given_in_both_places_the_later_one_wins() -> None:
    args = parse("--timeout", "5", "--endpoint", "tcp://a:1", "status", "--timeout", "7")
    assert args.timeout == 7.0 and args.endpoint == "tcp://a:1"


@pytest.mark.parametrize(
    "argv",
    [
        ["cache-pool", "list", "--json"],
        ["cache-pool", "--json", "list"],
        ["--json", "cache-pool", "list"],
    ],
)
def test_nested_commands_take_the_shared_options_too(argv: list[str]) -> None:
    args = parse(*argv)
    assert args.json is True and args.pool_command == "list"


def test_command_options_mix_with_shared_ones() -> None:
    args = parse("refresh", "db.t", "--partition", "a=1", "--sync", "--json", "--sync-timeout", "3")
    assert args.json and args.sync and args.sync_timeout == 3.0 and args.partition == ["a=1"]


def test_unknown_options_are_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse("status", "--jsn")
    assert exc.value.code == 2 and "--jsn" in capsys.readouterr().err


# -- the request --------------------------------------------------------------------------


def test_request_fields_of_a_refresh_with_sync() -> None:
    command, fields = request_fields(
        parse("refresh", "Db.T", "--partition", "a=1", "--sync", "--sync-timeout", "2")
    )
    assert command == "refresh"
    assert fields == {
        "db_name": "db",
        "tbl_name": "t",
        "partitions": ["a=1"],
        "sync": True,
        "sync_timeout_ms": 2000,
    }


def test_request_fields_of_cache_pool_alter() -> None:
    command, fields = request_fields(parse("cache-pool", "alter", "p", "--no-limit", "--json"))
    assert command == "cache-pool alter" and fields == {"options": {"pool": "p", "limit": ""}}


def test_refresh_needs_a_table() -> None:
    with pytest.raises(InvalidRequestError, match="DB.TABLE"):
        request_fields(parse("refresh", "nodot"))


# -- running against a fake client ---------------------------------------------------------


class FakeClient:
    calls: list[tuple[str, float, int, dict[str, Any]]] = []
    response: Any = None

    def __init__(self, endpoint: str, *, timeout_s: float) -> None:
        self.endpoint, self.timeout_s = endpoint, timeout_s

    def call(self, command: int, **fields: Any) -> Any:
        FakeClient.calls.append((self.endpoint, self.timeout_s, command, fields))
        return FakeClient.response


@pytest.fixture
def fake_client(monkeypatch: pytest.MonkeyPatch) -> type[FakeClient]:
    import catalogd.admin.client

    FakeClient.calls = []
    monkeypatch.setattr(catalogd.admin.client, "AdminClient", FakeClient)
    return FakeClient


def status_response(detail: dict[str, Any]) -> Any:
    return svc.TAdminResponse(
        status=svc.TStatus(code=svc.TStatusCode.OK), detail_json=json.dumps(detail)
    )


def test_status_json_after_the_command_prints_the_full_detail(
    fake_client: type[FakeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_client.response = status_response(STATUS)
    code = admin_cli.run(parse("status", "--json", "--endpoint", "tcp://h:1", "--timeout", "4"))
    assert code == 0
    assert json.loads(capsys.readouterr().out)["detail"] == STATUS
    assert fake_client.calls == [("tcp://h:1", 4.0, svc.TAdminCommand.STATUS, {})]


def test_status_prints_the_summary_by_default(
    fake_client: type[FakeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_client.response = status_response(STATUS)
    assert admin_cli.run(parse("status")) == 0
    assert capsys.readouterr().out == format_status(STATUS) + "\n"


@pytest.mark.parametrize(("status", "exit_code"), [("NOTFOUND", 4), ("BUSY", 7), ("ERROR", 2)])
def test_error_answers_keep_their_exit_codes(
    fake_client: type[FakeClient], capsys: pytest.CaptureFixture[str], status: str, exit_code: int
) -> None:
    fake_client.response = svc.TAdminResponse(
        status=svc.TStatus(code=svc.TStatusCode._NAMES_TO_VALUES[status], message="no such")
    )
    assert admin_cli.run(parse("refresh", "db.t")) == exit_code
    assert capsys.readouterr().err == f"catalogd: {status}: no such\n"


def test_sync_timeout_is_added_and_unconfirmed_subscribers_exit_5(
    fake_client: type[FakeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_client.response = svc.TAdminResponse(
        status=svc.TStatus(code=svc.TStatusCode.OK),
        version=12,
        unconfirmed_subscribers=["dead"],
        detail_json=json.dumps({"confirmed_subscribers": ["alive"]}),
    )
    argv = ("refresh", "db.t", "--sync", "--sync-timeout", "3", "--timeout", "10")
    assert admin_cli.run(parse(*argv)) == 5
    assert fake_client.calls[0][1] == 13.0
    assert capsys.readouterr().out == (
        "refresh ok: version 12, confirmed by 1 subscriber(s), NOT confirmed: dead\n"
    )


# -- the status summary ---------------------------------------------------------------------

# What handlers.status_detail sends (see tests/e2e/test_admin.py for the live keys).
STATUS: dict[str, Any] = {
    "version": 12345,
    "delta_log": {"from": 12000, "to": 12345},
    "objects": {
        "DATABASE": 3,
        "HDFS_PARTITION": 4210,
        "PRIVILEGE": 7,
        "TABLE": 115,
        "VIEW": 5,
    },
    "tables_loaded": 118,
    "tables_not_loaded": 2,
    "service_id": "4f1c2a9e",
    "endpoint": "tcp://127.0.0.1:26500",
    "pub_endpoint": "tcp://127.0.0.1:41234",
    "uptime_s": 7384.123,
    "names_published_s": 0.4213456,
    "all_loaded_s": None,
    "loader": {"queued": 2, "loaded": 118, "failed": 1},
    "hms": {"address": "thrift://127.0.0.1:9083", "healthy": True, "error": None},
    "change_detection": "events",
    "published": {"messages": 99, "bytes": 123456},
    "snapshots": 2,
    "catch_ups": 1,
    "garbage_messages": 0,
    "subscribers": {
        "driver-1": {"applied_version": 12345, "last_report_age_s": 0.213, "live": True},
        "driver-2": {"applied_version": 12344, "last_report_age_s": 1.5, "live": True},
        "doomed": {"applied_version": 12000, "last_report_age_s": 45.25, "live": False},
    },
}


def rows(text: str) -> dict[str, str]:
    """``label  value`` lines of the summary (subscriber lines start with spaces)."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(" "):
            label, value = re.split(r"\s{2,}", line, maxsplit=1)
            out[label] = value
    return out


def test_status_summary_is_short_and_readable() -> None:
    text = format_status(STATUS)
    summary = rows(text)
    assert summary["version"] == "12345 (delta log from 12000)"
    assert summary["service id"] == "4f1c2a9e"
    assert summary["uptime"] == "2h 03m"
    assert summary["databases"] == "3"
    assert summary["tables"] == "118 loaded / 120 known (incl. 5 views)"
    assert summary["partitions"] == "4,210"
    assert summary["other objects"] == "PRIVILEGE 7"
    assert summary["loading"] == (
        "118 of 120 tables loaded (98%), 2 queued, 1 failed, names published after 0.42s"
    )
    assert summary["HMS"] == "thrift://127.0.0.1:9083, healthy"
    assert summary["change detection"] == "events"
    assert summary["subscribers"] == "3 (2 live)"
    assert len(text.splitlines()) < 20
    # No raw floats, no JSON fragments.
    assert not re.search(r"\d\.\d{3,}", text) and "{" not in text and "null" not in text


def test_status_summary_shows_each_subscribers_lag() -> None:
    lines = [line.split() for line in format_status(STATUS).splitlines() if line.startswith(" ")]
    assert [" ".join(words) for words in lines] == [
        "driver-1 up to date (version 12345), last report 0.21s ago",
        "driver-2 1 version behind (at 12344), last report 1.50s ago",
        "doomed 345 versions behind (at 12000), last report 45.2s ago, not live",
    ]


def test_status_summary_when_everything_is_loaded_and_hms_is_down() -> None:
    detail = dict(
        STATUS,
        tables_loaded=120,
        tables_not_loaded=0,
        all_loaded_s=1.8671012599997994,
        loader={"queued": 0, "loaded": 120, "failed": 0},
        hms={"address": "thrift://hms:9083", "healthy": False, "error": "connection refused"},
        subscribers={},
    )
    summary = rows(format_status(detail))
    assert summary["loading"] == "done, names published after 0.42s, all tables loaded after 1.87s"
    assert summary["HMS"] == "thrift://hms:9083, UNHEALTHY: connection refused"
    assert summary["subscribers"] == "none"


def test_status_summary_survives_missing_keys() -> None:
    summary = rows(format_status({"version": 7}))
    assert summary["version"] == "7" and summary["uptime"] == "?" and summary["HMS"] == "?"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.004, "0.00s"),
        (1.8671012599997994, "1.87s"),
        (12.34, "12.3s"),
        (245.4, "4m 05s"),
        (7384.123, "2h 03m"),
        (3 * 86400 + 4 * 3600 + 59, "3d 04h"),
        (None, "?"),
    ],
)
def test_durations_are_rounded(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


HA_ACTIVE = {
    "role": "active",
    "epoch": 3,
    "holder": "node-a",
    "lease_s": 3.0,
    "renew_interval_s": 1.0,
    "active": {
        "holder": "node-a",
        "epoch": 3,
        "endpoint": "tcp://a:26500",
        "admin": "tcp://a:26502",
        "expires_in_s": 2.41,
    },
    "peers": [
        {
            "holder": "node-a",
            "endpoint": "tcp://a:26500",
            "admin": "tcp://a:26502",
            "role": "active",
            "seen_s_ago": 0.2,
            "self": True,
        },
        {
            "holder": "node-b",
            "endpoint": "tcp://b:26500",
            "admin": "tcp://b:26502",
            "role": "standby",
            "seen_s_ago": 0.9,
            "self": False,
        },
    ],
}


def test_status_summary_shows_ha_role_epoch_lease_and_peers() -> None:
    text = format_status({**STATUS, "ha": HA_ACTIVE})
    summary = rows(text)
    assert summary["HA"] == "active, epoch 3, lease expires in 2.41s (renewed every 1.00s)"
    assert summary["HA peers"] == "2"
    assert "  node-b  standby, tcp://b:26500 (admin tcp://b:26502), seen 0.90s ago" in text
    assert "  node-a  active, this node, tcp://a:26500" in text
    standby = {**HA_ACTIVE, "role": "standby", "epoch": None}
    assert rows(format_status({**STATUS, "ha": standby}))["HA"] == (
        "standby; active: node-a (epoch 3, tcp://a:26500), lease expires in 2.41s"
    )
    assert "HA" not in rows(format_status(STATUS))  # HA off: no HA rows


def test_change_detection_says_starting_until_its_first_cycle() -> None:
    from catalogd.runtime_info import Health

    for mode in ("auto", "events", "poll"):
        detail = {**STATUS, "change_detection": Health.at_start(mode).detector}
        assert rows(format_status(detail))["change detection"] == "starting"
    assert Health.at_start("off").detector == "off"
