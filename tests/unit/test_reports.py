"""Report timing (subscriber/reports.py): every interval with a message, a tick later."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from subscriber.reports import ReportClock


def test_due_an_interval_after_the_last_and_a_slack_later_for_a_tick() -> None:
    clock = ReportClock(interval=1.0)
    clock.sent(5, 10.0)
    assert clock.due_at(5, 10.2) == 11.0
    assert clock.due_at(6, 10.2, slack=1.0) == 12.0


def test_asked_versions_are_due_at_once_until_one_as_new_has_gone() -> None:
    clock = ReportClock(interval=1.0)
    clock.sent(5, 10.0)
    clock.ask(7)
    assert not clock.asked(5)  # this one went already
    assert clock.asked(6) and clock.due_at(6, 10.1) == 10.1
    clock.sent(6, 10.1)
    assert clock.asked(7)
    clock.sent(7, 10.2)
    assert not clock.asked(8) and clock.due_at(8, 10.3) == 11.2


@given(st.floats(0.1, 5.0), st.floats(0.0, 5.0), st.floats(0.0, 100.0))
def test_a_report_is_never_due_before_its_interval_unless_asked(
    interval: float, slack: float, last: float
) -> None:
    clock = ReportClock(interval=interval)
    clock.sent(3, last)
    assert clock.due_at(4, last, slack) >= last + interval


@given(
    interval=st.sampled_from([0.5, 1.0]),
    last=st.integers(-1, 5),
    at=st.floats(0, 10),
    asked=st.integers(0, 8),
    current=st.integers(0, 8),
    now=st.floats(0, 12),
    slack=st.sampled_from([0.0, 1.0]),
)
def test_due_answers_what_due_at_says_in_one_call(
    interval: float, last: int, at: float, asked: int, current: int, now: float, slack: float
) -> None:
    clock = ReportClock(interval=interval, version=last, at=at)
    clock.ask(asked)
    assert clock.due(current, now, slack) == (now >= clock.due_at(current, now, slack))
