"""What one client connection holds in HMS: its locks and open transactions (pure).

The HMS endpoint keeps one :class:`Session` per client connection and shows it
every call it forwards (:meth:`Session.observe`: method name, argument bytes, the
upstream reply). While the connection holds an HMS lock or an open transaction,
:attr:`Session.holding` is true and the endpoint forwards *every* read: an
optimistic writer (PyIceberg's ``HiveCatalog``, Iceberg's ``HiveTableOperations``,
Hive ACID) reads under its lock what it is about to overwrite, and that read must
be HMS's, not a cache that may not have seen another writer's commit yet.

Invariants:

* Ids come from the wire: ``lock``'s ``LockResponse.lockid``, ``open_txns``'
  ``OpenTxnsResponse.txn_ids``, and the ids a request names (``check_lock``,
  ``heartbeat``, ``heartbeat_txn_range``, ``allocate_table_write_ids``: a client
  holds what it checks, heartbeats or writes with, wherever it opened it). They
  are read with the binary protocol's field ids, so methods and structs missing
  from the project's IDL are read all the same.
* A lock is released by a successful ``unlock`` (or one answering
  ``NoSuchLockException``); a transaction, and the locks taken in it, by any
  answer to ``commit_txn``/``abort_txn``/``abort_txns`` (success, no such or
  aborted transaction all mean it is no longer open).
* When in doubt the session holds: a lock or transaction call HMS's answer to
  which was lost or cannot be read, or more than ``cap`` ids at once, make it
  hold until the connection ends (:attr:`Session.sticky`). Memory is bounded by
  ``cap`` ids.

Not thread-safe: one connection thread owns its session.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from subscriber.metastore import framing
from subscriber.protocol import binary
from subscriber.protocol.errors import ProtocolError

__all__ = ["DEFAULT_CAP", "LOCK_METHODS", "Session"]

DEFAULT_CAP = 1024
"""Most lock and transaction ids one connection is followed for, before it holds for good."""

_I64 = struct.Struct(">q").unpack_from
_I32 = struct.Struct(">i").unpack_from
_MAX_DEPTH = 64


class _Many:
    """A list of ids longer than the cap (its values are not kept)."""


_TOO_MANY = _Many()


@dataclass
class Session:
    """The locks and transactions one HMS client connection holds. See the module docstring.

    Attributes:
        locks: lock id -> the transaction it was taken in (None: a plain lock).
        txns: open transaction ids.
        sticky: hold until the connection ends (lost answers, or past ``cap``).
    """

    cap: int = DEFAULT_CAP
    locks: dict[int, int | None] = field(default_factory=dict)
    txns: set[int] = field(default_factory=set)
    sticky: bool = False

    @property
    def holding(self) -> bool:
        """Whether this connection's reads must all go to HMS."""
        return self.sticky or bool(self.locks) or bool(self.txns)

    def observe(self, name: str, args: bytes, reply: bytes | None) -> None:
        """Take in one forwarded call: ``args`` its argument struct's bytes, ``reply``
        the whole reply message from HMS (None: oneway, or HMS's answer was lost)."""
        rule = _RULES.get(name)
        if rule is None or self.sticky:
            return
        try:
            rule(self, _Call(args, reply))
        except (ProtocolError, IndexError, struct.error):
            self._hold_for_good()  # cannot tell what it holds: assume everything
        if len(self.locks) + len(self.txns) > self.cap:
            self._hold_for_good()

    # -- the rules, by method ------------------------------------------------------------

    def _lock(self, call: _Call) -> None:
        if call.reply is None:
            self._hold_for_good()  # granted or not: unknown
            return
        if call.outcome() != 0:
            return  # refused: nothing held
        lockid = call.result_fields().get(1)
        if not isinstance(lockid, int):
            raise ProtocolError("a LockResponse without lockid")
        txnid = call.arg_fields().get(2)
        self.locks[lockid] = txnid if isinstance(txnid, int) else None

    def _check_lock(self, call: _Call) -> None:
        lockid = call.arg_fields().get(1)
        if isinstance(lockid, int) and call.outcome() == 0:
            self.locks.setdefault(lockid, None)

    def _unlock(self, call: _Call) -> None:
        lockid = call.arg_fields().get(1)
        # 0: unlocked; 1: NoSuchLockException (not held); 2: TxnOpenException (stays).
        if isinstance(lockid, int) and call.outcome() in (0, 1):
            self.locks.pop(lockid, None)

    def _open_txns(self, call: _Call) -> None:
        if call.reply is None:
            self._hold_for_good()
            return
        if call.outcome() == 0:
            self._add_txns(call.result_fields().get(1))

    def _end_txns(self, call: _Call) -> None:
        if call.reply is None:
            return  # still open as far as we know
        ids = call.arg_fields().get(1)
        for txn in [ids] if isinstance(ids, int) else ids if isinstance(ids, tuple) else ():
            self.txns.discard(txn)
            for lockid in [k for k, t in self.locks.items() if t == txn]:
                del self.locks[lockid]

    def _heartbeat(self, call: _Call) -> None:
        if call.outcome() != 0:
            return
        fields = call.arg_fields()
        lockid, txnid = fields.get(1), fields.get(2)
        if isinstance(lockid, int) and lockid:
            self.locks.setdefault(lockid, None)
        if isinstance(txnid, int) and txnid:
            self.txns.add(txnid)

    def _heartbeat_txn_range(self, call: _Call) -> None:
        if call.outcome() != 0:
            return
        fields = call.arg_fields()
        low, high = fields.get(1), fields.get(2)
        if not isinstance(low, int) or not isinstance(high, int):
            raise ProtocolError("a HeartbeatTxnRangeRequest without min/max")
        if high - low + 1 > self.cap:
            self._hold_for_good()
            return
        self.txns.update(range(low, high + 1))

    def _write_ids(self, call: _Call) -> None:
        if call.outcome() != 0:
            return
        for value in call.arg_fields().values():
            if isinstance(value, tuple) or value is _TOO_MANY:
                self._add_txns(value)

    def _add_txns(self, ids: Any) -> None:
        if ids is _TOO_MANY:
            self._hold_for_good()
        elif isinstance(ids, tuple):
            self.txns.update(ids)
        else:
            raise ProtocolError("expected a list of transaction ids")

    def _hold_for_good(self) -> None:
        self.sticky = True
        self.locks.clear()
        self.txns.clear()


_RULES: dict[str, Callable[[Session, _Call], None]] = {
    "lock": Session._lock,
    "check_lock": Session._check_lock,
    "unlock": Session._unlock,
    "open_txns": Session._open_txns,
    "commit_txn": Session._end_txns,
    "abort_txn": Session._end_txns,
    "abort_txns": Session._end_txns,
    "heartbeat": Session._heartbeat,
    "heartbeat_txn_range": Session._heartbeat_txn_range,
    "allocate_table_write_ids": Session._write_ids,
}
LOCK_METHODS = frozenset(_RULES)
"""The methods a :class:`Session` follows."""


@dataclass(frozen=True)
class _Call:
    """One forwarded call's bytes, read lazily: the first (request) argument's fields,
    and the reply's outcome and ``success`` struct fields."""

    args: bytes
    reply: bytes | None

    def arg_fields(self) -> dict[int, Any]:
        """The fields of argument 1 (the request struct) of the call."""
        outer = _fields(self.args, 0, descend=1)[0]
        request = outer.get(1)
        if not isinstance(request, dict):
            raise ProtocolError("the call carries no request struct")
        return request

    def outcome(self) -> int | None:
        """0: success (or void); n: the declared exception in result field n; None:
        no answer, or an application exception (an HMS internal error)."""
        body = self._result_body()
        if body is None:
            return None
        if not body or body[0] == binary.STOP:
            return 0
        return int.from_bytes(body[1:3], "big", signed=True)

    def result_fields(self) -> dict[int, Any]:
        """The fields of the result's ``success`` struct."""
        body = self._result_body()
        success = _fields(body or b"\x00", 0, descend=1)[0].get(0)
        if not isinstance(success, dict):
            raise ProtocolError("the reply carries no success struct")
        return success

    def _result_body(self) -> bytes | None:
        if self.reply is None:
            return None
        header = framing.read_header(self.reply)
        if header is None or header.type != framing.REPLY:
            return None
        return self.reply[header.body_start :]


def _fields(
    buf: bytes, pos: int, *, descend: int, cap: int = DEFAULT_CAP
) -> tuple[dict[int, Any], int]:
    """The fields of the struct at ``pos``, by id: integers as ``int``, lists of i64
    as a tuple (or :data:`_TOO_MANY` past ``cap`` items), structs as a dict while
    ``descend`` allows; everything else stepped over (``None``). Returns the fields
    and the position after the struct."""
    out: dict[int, Any] = {}
    limit = len(buf)
    while True:
        ftype = buf[pos]
        if ftype == binary.STOP:
            return out, pos + 1
        fid = int.from_bytes(buf[pos + 1 : pos + 3], "big", signed=True)
        pos += 3
        if ftype == binary.I64:
            out[fid] = _I64(buf, pos)[0]
            pos += 8
        elif ftype == binary.I32:
            out[fid] = _I32(buf, pos)[0]
            pos += 4
        elif ftype == binary.LIST and buf[pos] == binary.I64:
            size = _I32(buf, pos + 1)[0]
            if size < 0 or size * 8 > limit - pos - 5:
                raise ProtocolError(f"bad list size {size}")
            start = pos + 5
            out[fid] = (
                _TOO_MANY if size > cap else tuple(_I64(buf, start + 8 * i)[0] for i in range(size))
            )
            pos = start + 8 * size
        elif ftype == binary.STRUCT and descend > 0:
            out[fid], pos = _fields(buf, pos, descend=descend - 1, cap=cap)
        else:
            out[fid] = None
            pos = binary.skip(buf, pos, ftype, _MAX_DEPTH, limit)
        if pos > limit:
            raise ProtocolError("a truncated struct")
