"""The partition name index answers as parsing every name would, on names of every
shape: escaped, upper-case columns, non-ASCII, malformed (the build refuses those,
as parsing does)."""

from __future__ import annotations

import random
import re

import pytest

from subscriber.partition_index import NameIndex
from subscriber.protocol.errors import InvalidRequestError
from subscriber.protocol.keys import parse_partition_name

_COLUMNS = ["dt", "DT", "r", "Région", "d%74", "", "a\nb"]
_VALUES = ["1", "x/1", "x%2F1", "é", "", "=", "1=2", "%", "%zz", "2024-01-02", "US"]


def _name(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        column, value = rng.choice(_COLUMNS), rng.choice(_VALUES)
        shapes = [f"{column}={value}"] * 8 + [f"{column}{value}", f"{column}={value}/"]
        parts.append(rng.choice(shapes))
    return "/".join(parts)


def _parsed(names: list[str], spec: dict[str, str]) -> set[str] | type[Exception]:
    """The answer by definition: every name parsed, or the error parsing one raises."""
    try:
        pairs = {name: set(parse_partition_name(name)) for name in names}
    except InvalidRequestError:
        return InvalidRequestError
    return {name for name in names if set(spec.items()) <= pairs[name]}


def _indexed(names: list[str], spec: dict[str, str]) -> set[str] | type[Exception]:
    try:
        index = NameIndex(names)
    except InvalidRequestError:
        return InvalidRequestError
    return index.matching(spec)


@pytest.mark.parametrize("seed", range(40))
def test_the_index_answers_as_parsing_every_name(seed: int) -> None:
    rng = random.Random(seed)
    names = [_name(rng) for _ in range(rng.randint(0, 30))]
    if seed % 2:  # half the cases only well-formed names, so answers are compared
        names = [n for n in names if _parsed([n], {}) is not InvalidRequestError]
    for _ in range(20):
        spec = {}
        for _ in range(rng.randint(1, 2)):
            spec[rng.choice(["dt", "r", "région", "d%74", "x"])] = rng.choice(_VALUES)
        if names and rng.random() < 0.6:  # pairs some name has (so some answers are not empty)
            try:
                pairs = parse_partition_name(rng.choice(names))
                spec = dict(rng.sample(pairs, rng.randint(1, len(pairs))))
            except InvalidRequestError:
                pass
        assert _indexed(names, spec) == _parsed(names, spec), (names, spec)


def test_the_usual_names_and_their_columns_in_any_case() -> None:
    names = [f"dt=2024-01-{d:02}/region=r{r}" for d in range(1, 31) for r in range(10)]
    index = NameIndex(names + ["DT=2024-01-02/Region=r1", "dt=2024%2D01%2D02/region=r1"])
    assert index.matching({"dt": "2024-01-02"}) == {
        *(f"dt=2024-01-02/region=r{r}" for r in range(10)),
        "DT=2024-01-02/Region=r1",
        "dt=2024%2D01%2D02/region=r1",
    }
    assert index.matching({"region": "r1", "dt": "2024-01-1"}) == set()
    assert NameIndex([]).matching({"dt": "1"}) == set()
    with pytest.raises(InvalidRequestError):
        NameIndex([*names, "dt=1/r"])


def test_the_patterns_without_possessive_quantifiers_match_the_same_names() -> None:
    """Python 3.10 compiles the patterns without them: the same names must match."""
    from subscriber import partition_index

    pattern = partition_index._PLAIN_NAME.pattern
    plain = re.compile(pattern.replace("++", "+").replace("*+", "*"))
    rng = random.Random(5)
    for _ in range(3000):
        name = _name(rng)
        assert bool(plain.fullmatch(name)) == bool(partition_index._PLAIN_NAME.fullmatch(name))
