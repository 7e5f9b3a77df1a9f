"""What one Spark statement asked HMS: calls reaching HMS, and the endpoint's outcomes.

:class:`CallRecorder` runs statements on a :class:`~support.spark_sql_server.SparkSql`
and notes, per statement, the calls a :class:`~support.hms_relay.CountingRelay`
saw (what reached HMS) and, through an endpoint, the change in
``endpoint.stats.by_method()`` (served, or forwarded for which reason).
:func:`markdown` renders a recording as the tables of docs/HMS-ENDPOINT.md.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from subscriber.metastore import MetastoreEndpoint
from support.hms_relay import CountingRelay
from support.spark_sql_server import SparkSql

_PY4J_CALL = re.compile(r"An error occurred while calling o\d+\.\w+\.\s*:?\s*")


@dataclass(frozen=True)
class Step:
    """One statement: its answer (rows, or the error's first line), what reached HMS
    and, through an endpoint, ``{method: {outcome: n}}``."""

    statement: str
    answer: Any
    reached: dict[str, int]
    endpoint: dict[str, dict[str, int]] = field(default_factory=dict)


def answer_of(raw: Mapping[str, Any]) -> Any:
    """Rows, or ``("error", first line)`` without Py4J's object ids."""
    if "error" in raw:
        text = _PY4J_CALL.sub("", str(raw["error"])).strip()
        return ("error", text.splitlines()[0] if text else "")
    return raw.get("rows", [])


def _delta(after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]) -> dict:
    out: dict[str, dict[str, int]] = {}
    for method, outcomes in after.items():
        for what, n in outcomes.items():
            gained = n - before.get(method, {}).get(what, 0)
            if gained:
                out.setdefault(method, {})[what] = gained
    return out


class CallRecorder:
    """Runs statements and records each one's calls (not thread-safe)."""

    def __init__(
        self,
        relay: CountingRelay,
        endpoint: MetastoreEndpoint | None = None,
        *,
        settle: bool = True,
    ) -> None:
        self.relay = relay
        self.endpoint = endpoint
        self.settle = settle
        self.steps: list[Step] = []

    def run(self, spark: SparkSql, statement: str, timeout: float = 120.0) -> Step:
        """Run ``statement``; with ``settle``, wait for the endpoint's pending reloads
        first, so its reads are not forwarded because of the previous one's write."""
        if self.endpoint is not None:
            if self.settle:
                self.endpoint.wait_settled(10)
            before = self.endpoint.stats.by_method()
        self.relay.reset()
        answer = answer_of(spark.attempt(statement, timeout))
        reached = dict(self.relay.reset())
        outcomes = {}
        if self.endpoint is not None:
            outcomes = _delta(self.endpoint.stats.by_method(), before)
        step = Step(statement, answer, reached, outcomes)
        self.steps.append(step)
        return step


def _calls(counts: Mapping[str, int]) -> str:
    return ", ".join(f"`{m}` {n}" for m, n in sorted(counts.items())) or "none"


def _outcomes(outcomes: Mapping[str, Mapping[str, int]]) -> tuple[str, str]:
    served: dict[str, int] = {}
    forwarded: dict[str, int] = {}
    for method, counts in outcomes.items():
        for what, n in counts.items():
            if what == "served":
                served[method] = served.get(method, 0) + n
            else:
                key = f"{method} ({what})"
                forwarded[key] = forwarded.get(key, 0) + n
    return _calls(served), _calls(forwarded)


def _short(answer: Any) -> str:
    if isinstance(answer, tuple):
        return str(answer[1])[:160]
    return answer if isinstance(answer, str) else f"{len(answer)} rows"


def markdown(direct: list[Step], via: list[Step]) -> str:
    """A table: statement | answer | calls direct | served | forwarded (reason) |
    calls reaching HMS through the endpoint."""
    lines = [
        "| statement | answer (direct / endpoint where they differ) | HMS calls, direct "
        "| endpoint: served | endpoint: forwarded (reason) | reached HMS via the endpoint |",
        "|---|---|---|---|---|---|",
    ]
    for d, v in itertools.zip_longest(direct, via):
        # a session that gave up early (see test_spark_hive_clients) has fewer steps
        d = d or Step(v.statement, "(not run)", {})
        v = v or Step(d.statement, "(not run)", {})
        answers = (
            [_short(d.answer)] if d.answer == v.answer else [_short(d.answer), _short(v.answer)]
        )
        answer = " / endpoint: ".join(answers).replace("|", "\\|")
        served, forwarded = _outcomes(v.endpoint)
        statement = d.statement.replace("|", "\\|")
        lines.append(
            f"| `{statement}` | {answer} | {_calls(d.reached)} | {served} | {forwarded} "
            f"| {_calls(v.reached)} |"
        )
    return "\n".join(lines) + "\n"
