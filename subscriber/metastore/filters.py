"""The partition filters of ``get_partitions_by_filter``, parsed and evaluated (pure).

Spark's ``HiveShim.convertFilters`` writes these strings; the grammar it emits
(and this module accepts) is::

    filter  := or
    or      := and ("or" and)*
    and     := atom ("and" atom)*
    atom    := "(" or ")" | column OP literal | literal OP column
             | "(" column ")" ["not"] "in" "(" literal ("," literal)* ")"
    OP      := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    literal := integer | "..." | '...'       (no escapes inside quotes, as in HMS's lexer)

Spark 4.3 (read from its ``Shim_v2_0`` class) writes ``IN`` lists as ``(col) in (1, 2)``
and ``(col) not in (...)``, which mean the ``or`` of ``=`` and the ``and`` of ``!=``.
Keywords are case-insensitive. Anything else Spark may send (``like``, dates,
other column types) raises :class:`Unsupported`, and so does a comparison whose
result could depend on the metastore's backing database: the caller then
forwards the call to HMS instead of guessing.

Semantics (HMS 2.3 with direct SQL, its default):

* string partition columns compare the raw partition value with the literal;
  ``=``/``!=`` always, ordering comparisons only when both sides compare the
  same under every collation (see :func:`_collation_safe`);
* integral columns (tinyint, smallint, int, bigint) compare numerically; a value
  that is no integer (``__HIVE_DEFAULT_PARTITION__``) matches nothing, any other
  non-integer value makes the filter unsupported (HMS would fail on it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from subscriber.protocol.hms_partition import NULL_PARTITION_VALUE

INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "integer", "bigint"})
_OPS = ("<=", ">=", "!=", "<>", "=", "<", ">")
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+)(?![\w.-])|\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|"
    r"(?P<op><=|>=|!=|<>|=|<|>)|(?P<paren>[(),])|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"
)
_INTEGER = re.compile(r"-?\d+\Z")
_KEYWORDS = ("and", "or", "not", "in")
_SAFE_WORD = re.compile(r"[a-z0-9]*\Z")


class Unsupported(Exception):
    """This filter cannot be evaluated exactly here: forward it."""


@dataclass(frozen=True, slots=True)
class Compare:
    column: str
    op: str
    value: str | int


@dataclass(frozen=True, slots=True)
class Junction:
    op: str  # "and" | "or"
    parts: tuple[Node, ...]


Node = Compare | Junction


def parse(text: str) -> Node:
    """The tree of ``text``.

    Raises:
        Unsupported: not in the grammar above.
    """
    tokens = _tokenize(text)
    node, pos = _or(tokens, 0)
    if pos != len(tokens):
        raise Unsupported(f"unexpected {tokens[pos][1]!r} in filter")
    return node


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Unsupported(f"cannot read filter at {text[pos : pos + 20]!r}")
        kind = match.lastgroup
        assert kind is not None
        value = match.group(kind)
        if kind in ("dq", "sq"):
            kind = "str"
        elif kind == "word":
            value = value.lower() if value.lower() in _KEYWORDS else value
            kind = value if value in _KEYWORDS else "word"
        tokens.append((kind, value))
        pos = match.end()
    return tokens


def _or(tokens: list[tuple[str, str]], pos: int) -> tuple[Node, int]:
    parts = []
    node, pos = _and(tokens, pos)
    parts.append(node)
    while pos < len(tokens) and tokens[pos][0] == "or":
        node, pos = _and(tokens, pos + 1)
        parts.append(node)
    return (parts[0] if len(parts) == 1 else Junction("or", tuple(parts))), pos


def _and(tokens: list[tuple[str, str]], pos: int) -> tuple[Node, int]:
    parts = []
    node, pos = _atom(tokens, pos)
    parts.append(node)
    while pos < len(tokens) and tokens[pos][0] == "and":
        node, pos = _atom(tokens, pos + 1)
        parts.append(node)
    return (parts[0] if len(parts) == 1 else Junction("and", tuple(parts))), pos


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!=", "<>": "<>"}


def _atom(tokens: list[tuple[str, str]], pos: int) -> tuple[Node, int]:
    if pos >= len(tokens):
        raise Unsupported("filter ends early")
    kind, value = tokens[pos]
    ahead = tokens[pos : pos + 3]
    if [t[0] for t in ahead] == ["paren", "word", "paren"] and ahead[0][1] + ahead[2][1] == "()":
        return _in_list(tokens, pos + 3, ahead[1][1].lower())  # Spark's "(col) [not] in (...)"
    if kind == "paren" and value == "(":
        node, pos = _or(tokens, pos + 1)
        if pos >= len(tokens) or tokens[pos] != ("paren", ")"):
            raise Unsupported("unbalanced parentheses")
        return node, pos + 1
    if pos + 3 > len(tokens):
        raise Unsupported("incomplete comparison")
    left, op, right = tokens[pos], tokens[pos + 1], tokens[pos + 2]
    if op[0] != "op":
        raise Unsupported(f"expected a comparison operator, got {op[1]!r}")
    if left[0] == "word" and right[0] in ("num", "str"):
        return Compare(left[1].lower(), _norm(op[1]), _literal(right)), pos + 3
    if right[0] == "word" and left[0] in ("num", "str"):
        return Compare(right[1].lower(), _norm(_FLIP[op[1]]), _literal(left)), pos + 3
    raise Unsupported("a comparison must have one column and one literal")


def _in_list(tokens: list[tuple[str, str]], pos: int, column: str) -> tuple[Node, int]:
    """``[not] in (a, b, ...)`` after ``(column)``."""
    negated = pos < len(tokens) and tokens[pos][0] == "not"
    pos += negated
    if tokens[pos : pos + 2] != [("in", "in"), ("paren", "(")]:
        raise Unsupported("expected `in (` after a parenthesised column")
    pos += 2
    values: list[str | int] = []
    while True:
        if pos >= len(tokens) or tokens[pos][0] not in ("num", "str"):
            raise Unsupported("expected a literal in an in-list")
        values.append(_literal(tokens[pos]))
        if pos + 1 < len(tokens) and tokens[pos + 1] == ("paren", ","):
            pos += 2
            continue
        if pos + 1 < len(tokens) and tokens[pos + 1] == ("paren", ")"):
            break
        raise Unsupported("unterminated in-list")
    op = "!=" if negated else "="
    parts = tuple(Compare(column, op, v) for v in values)
    node: Node = parts[0] if len(parts) == 1 else Junction("and" if negated else "or", parts)
    return node, pos + 2


def _norm(op: str) -> str:
    return "!=" if op == "<>" else op


def _literal(token: tuple[str, str]) -> str | int:
    return int(token[1]) if token[0] == "num" else token[1]


# -- evaluation ---------------------------------------------------------------------------

Predicate = Callable[[Sequence[str]], bool]


def compile_filter(node: Node, columns: Sequence[tuple[str, str]]) -> Predicate:
    """A predicate over a partition's values (in column order) for ``node``.

    ``columns`` are the table's partition columns as ``(name, hive type)``.

    Raises:
        Unsupported: an unknown column, an unsupported column type, or a
            literal whose type does not match its column's.
    """
    index = {name.lower(): (i, type_.lower()) for i, (name, type_) in enumerate(columns)}
    return _compile(node, index)


def _compile(node: Node, index: dict[str, tuple[int, str]]) -> Predicate:
    if isinstance(node, Junction):
        parts = [_compile(p, index) for p in node.parts]
        if node.op == "and":
            return lambda values: all(p(values) for p in parts)
        return lambda values: any(p(values) for p in parts)
    if node.column not in index:
        raise Unsupported(f"{node.column} is not a partition column")
    position, type_ = index[node.column]
    if type_ == "string":
        if not isinstance(node.value, str):
            raise Unsupported("integer literal on a string column")
        return _string_compare(position, node.op, node.value)
    if type_ in INTEGRAL_TYPES:
        if not isinstance(node.value, int):
            raise Unsupported("string literal on an integral column")
        return _integral_compare(position, node.op, node.value)
    raise Unsupported(f"partition column type {type_} is not evaluated here")


_COMPARE: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


def _string_compare(position: int, op: str, literal: str) -> Predicate:
    compare = _COMPARE[op]
    if op in ("=", "!="):
        return lambda values: compare(values[position], literal)

    def ordered(values: Sequence[str]) -> bool:
        value = values[position]
        if not _collation_safe(value, literal):
            raise Unsupported(f"ordering of {value!r} and {literal!r} depends on collation")
        return compare(value, literal)

    return ordered


def _integral_compare(position: int, op: str, literal: int) -> Predicate:
    compare = _COMPARE[op]

    def numeric(values: Sequence[str]) -> bool:
        value = values[position]
        if value == NULL_PARTITION_VALUE:
            return False  # HMS casts it to NULL: no comparison holds
        if not _INTEGER.match(value):
            raise Unsupported(f"partition value {value!r} of an integral column")
        return compare(int(value), literal)

    return numeric


def _collation_safe(a: str, b: str) -> bool:
    """Whether every collation a metastore database may use orders ``a`` and ``b``
    as code points do: both lower-case ASCII letters and digits only, or both the
    same shape of digits and punctuation (dates, times, fixed-width numbers)."""
    if _SAFE_WORD.match(a) and _SAFE_WORD.match(b):
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.isdigit() and y.isdigit() and x.isascii() and y.isascii():
            continue
        if x != y or x.isalnum():
            return False
    return True


def matching(
    text: str, columns: Sequence[tuple[str, str]], partitions: Sequence[tuple[str, Sequence[str]]]
) -> list[str]:
    """The names of ``partitions`` (``(name, values)`` pairs) that ``text`` selects.

    Raises:
        Unsupported: the filter cannot be evaluated exactly (forward it).
    """
    predicate = compile_filter(parse(text), columns)
    return [name for name, values in partitions if predicate(values)]
