"""Hive column type strings to Impala ``TColumnType`` trees, and back.

HMS stores column types as Hive type strings (``int``, ``decimal(10,2)``,
``array<struct<a:int,b:string>>``); Impala's ``TColumnType`` is the same tree
flattened depth-first into ``TTypeNode`` s. Pure functions.
"""

from __future__ import annotations

import re

import idl
from subscriber.protocol.errors import InvalidRequestError

types = idl.catalog_objects.Types
P = types.TPrimitiveType

_SCALARS = {
    "boolean": P.BOOLEAN,
    "tinyint": P.TINYINT,
    "smallint": P.SMALLINT,
    "int": P.INT,
    "integer": P.INT,
    "bigint": P.BIGINT,
    "float": P.FLOAT,
    "double": P.DOUBLE,
    "double precision": P.DOUBLE,
    "date": P.DATE,
    "timestamp": P.TIMESTAMP,
    "string": P.STRING,
    "binary": P.BINARY,
    "void": P.NULL_TYPE,
}
_NAMES = {v: k for k, v in reversed(list(_SCALARS.items()))}
# A name may hold spaces ("double precision"): words separated by whitespace. Greedy
# and without look-ahead, so linear in the input (a lazy match with a look-ahead took
# 16.8 s for "int" + 32,000 spaces + "x", a type HMS accepts: it checks the first word).
# A token never starts or ends with whitespace.
_TOKEN = re.compile(r"\s*([A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*|[<>(),:]|\d+|`[^`]*`)", re.ASCII)


def _shown(text: str, limit: int = 100) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters (a type string is
    anyone's text, and the message travels in a table's load status)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def _tokens(text: str) -> list[str]:
    tokens = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise InvalidRequestError(
                f"cannot parse Hive type {_shown(text)} at {_shown(text[pos:])}"
            )
        tokens.append(
            match.group(1).lower() if not match.group(1).startswith("`") else match.group(1)
        )
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


def column_type(hive_type: str) -> object:
    """Parse a Hive type string into a ``TColumnType``.

    Raises:
        InvalidRequestError: the string is not a Hive type.
    """
    tokens = _tokens(hive_type)
    nodes: list[object] = []
    pos = _parse(tokens, 0, nodes, hive_type)
    if pos != len(tokens):
        raise InvalidRequestError(f"trailing text in Hive type {_shown(hive_type)}")
    return types.TColumnType(types=nodes)


def _expect(tokens: list[str], pos: int, token: str, text: str) -> int:
    if pos >= len(tokens) or tokens[pos] != token:
        raise InvalidRequestError(f"expected {token!r} in Hive type {_shown(text)}")
    return pos + 1


def _number(tokens: list[str], pos: int, text: str) -> tuple[int, int]:
    if pos >= len(tokens) or not tokens[pos].isdigit():
        raise InvalidRequestError(f"expected a number in Hive type {_shown(text)}")
    return int(tokens[pos]), pos + 1


def _parse(tokens: list[str], pos: int, nodes: list[object], text: str) -> int:
    if pos >= len(tokens):
        raise InvalidRequestError(f"incomplete Hive type {_shown(text)}")
    name = tokens[pos]
    pos += 1
    if name == "array":
        nodes.append(types.TTypeNode(type=types.TTypeNodeType.ARRAY))
        pos = _expect(tokens, pos, "<", text)
        pos = _parse(tokens, pos, nodes, text)
        return _expect(tokens, pos, ">", text)
    if name == "map":
        nodes.append(types.TTypeNode(type=types.TTypeNodeType.MAP))
        pos = _expect(tokens, pos, "<", text)
        pos = _parse(tokens, pos, nodes, text)
        pos = _expect(tokens, pos, ",", text)
        pos = _parse(tokens, pos, nodes, text)
        return _expect(tokens, pos, ">", text)
    if name == "struct":
        node = types.TTypeNode(type=types.TTypeNodeType.STRUCT, struct_fields=[])
        nodes.append(node)
        pos = _expect(tokens, pos, "<", text)
        while True:
            if pos >= len(tokens):
                raise InvalidRequestError(f"incomplete Hive type {_shown(text)}")
            field_name = tokens[pos].strip("`")
            pos = _expect(tokens, pos + 1, ":", text)
            node.struct_fields.append(types.TStructField(name=field_name))
            pos = _parse(tokens, pos, nodes, text)
            if pos < len(tokens) and tokens[pos] == ",":
                pos += 1
                continue
            return _expect(tokens, pos, ">", text)
    scalar = types.TScalarType(type=_SCALARS.get(name))
    if name in ("decimal", "numeric"):
        scalar.type, scalar.precision, scalar.scale = P.DECIMAL, 10, 0
        if pos < len(tokens) and tokens[pos] == "(":
            scalar.precision, pos = _number(tokens, pos + 1, text)
            if tokens[pos] == ",":
                scalar.scale, pos = _number(tokens, pos + 1, text)
            pos = _expect(tokens, pos, ")", text)
    elif name in ("char", "varchar"):
        scalar.type = P.CHAR if name == "char" else P.VARCHAR
        pos = _expect(tokens, pos, "(", text)
        scalar.len, pos = _number(tokens, pos, text)
        pos = _expect(tokens, pos, ")", text)
    elif scalar.type is None:
        raise InvalidRequestError(f"unknown Hive type {_shown(name)} in {_shown(text)}")
    nodes.append(types.TTypeNode(type=types.TTypeNodeType.SCALAR, scalar_type=scalar))
    return pos


def type_name(column_type: object) -> str:
    """Render a ``TColumnType`` back as a Hive type string."""
    text, _ = _render(column_type.types, 0)  # type: ignore[attr-defined]
    return text


def _render(nodes: list, pos: int) -> tuple[str, int]:
    node = nodes[pos]
    if node.type == types.TTypeNodeType.ARRAY:
        item, pos = _render(nodes, pos + 1)
        return f"array<{item}>", pos
    if node.type == types.TTypeNodeType.MAP:
        key, pos = _render(nodes, pos + 1)
        value, pos = _render(nodes, pos)
        return f"map<{key},{value}>", pos
    if node.type == types.TTypeNodeType.STRUCT:
        fields = []
        pos += 1
        for field in node.struct_fields:
            rendered, pos = _render(nodes, pos)
            fields.append(f"{field.name}:{rendered}")
        return f"struct<{','.join(fields)}>", pos
    scalar = node.scalar_type
    if scalar.type == P.DECIMAL:
        return f"decimal({scalar.precision},{scalar.scale})", pos + 1
    if scalar.type in (P.CHAR, P.VARCHAR):
        return f"{'char' if scalar.type == P.CHAR else 'varchar'}({scalar.len})", pos + 1
    return _NAMES[scalar.type], pos + 1
