"""HMS call arguments and replies as bytes (pure): what the endpoint decodes and sends.

The endpoint forwards most calls byte for byte; these helpers cover the few it
reads (:func:`decode_args`) or answers itself: a result struct (:func:`result`),
a declared HMS exception (:func:`exception`), HMS being unreachable
(:func:`unavailable`), and whether a forwarded reply succeeded (:func:`succeeded`).
"""

from __future__ import annotations

from typing import Any

from thriftpy2.thrift import TException

import idl
from subscriber.metastore import framing
from subscriber.protocol import binary, codec

hms = idl.hive_metastore
_SERVICE = hms.ThriftHiveMetastore
_INTERNAL_ERROR = 6


def decode_args(name: str, body: bytes) -> Any:
    """The ``<name>_args`` struct of a call's body (``name``: an HMS method).

    Raises:
        ProtocolError: the bytes are no such struct.
    """
    args_cls = getattr(_SERVICE, f"{name}_args")
    return codec.decode(args_cls, body)


def result(name: str, seqid: int, struct: Any) -> bytes:
    """A REPLY carrying ``struct`` (a ``<name>_result``)."""
    return framing.reply(name, seqid, codec.encode(struct, check=False))


def exception(name: str, seqid: int, exc: TException) -> bytes:
    """A REPLY carrying ``exc`` in the result field the method declares for its type,
    else a ``TApplicationException`` (INTERNAL_ERROR)."""
    result_cls = getattr(_SERVICE, f"{name}_result")
    for _, spec in result_cls.thrift_spec.items():
        if len(spec) >= 3 and spec[2] is type(exc):
            return result(name, seqid, result_cls(**{spec[1]: exc}))
    return framing.application_exception(name, seqid, str(exc), _INTERNAL_ERROR)


def unavailable(name: str, seqid: int, message: str) -> bytes:
    """HMS unreachable: a ``MetaException`` when the method declares one, else a
    ``TApplicationException`` (INTERNAL_ERROR)."""
    result_cls = getattr(_SERVICE, f"{name}_result", None)
    if result_cls is not None:
        for _, spec in result_cls.thrift_spec.items():
            if len(spec) >= 3 and spec[2] is hms.MetaException:
                error = hms.MetaException(message=message)
                return result(name, seqid, result_cls(**{spec[1]: error}))
    return framing.application_exception(name, seqid, message, _INTERNAL_ERROR)


def succeeded(reply: bytes) -> bool:
    """Whether a REPLY carries a result rather than a declared exception: its
    result struct is empty (void) or starts with field 0 (``success``)."""
    header = framing.read_header(reply)
    if header is None or header.type != framing.REPLY:
        return False
    body = reply[header.body_start :]
    if not body or body[0] == binary.STOP:
        return True
    return len(body) >= 3 and body[1:3] == b"\x00\x00"
