"""A thin Hive Metastore Thrift client: the calls catalogd makes, with retries.

Each method is one HMS call (``iter_partitions`` is a few) returning the thriftpy2
structs of :data:`idl.hive_metastore` unchanged; converting them to catalog
values is the loader's job.

Failure policy, applied at this boundary:

* transport failures (refused, reset, timeout, EOF) drop the connection; the
  call is retried on a fresh one with exponential backoff (``backoff_s * 2**n``)
  up to ``retries`` times, then :class:`MetastoreUnavailableError` names the
  address. Writes (``idempotent=False``) are retried only when the connection
  could not be opened, i.e. when the request was certainly not sent.
* ``NoSuchObjectException``/``UnknownDBException`` become :class:`NotFoundError`
  naming the object; so does the ``MetaException`` wrapping a
  NullPointerException that HMS 2.3 raises for some calls on a dropped database.
* any other HMS exception (MetaException, AlreadyExists, InvalidObject,
  InvalidOperation, TApplicationException) becomes :class:`MetastoreError`.

Versions: HMS 4.0 removed ``get_table`` and ``get_table_objects_by_name`` (its
``ThriftHiveMetastore$Iface`` has only ``get_table_req`` and
``get_table_objects_by_name_req``, which 2.3 and 3.1 have too). A client asks the
old call first; when the server answers "Invalid method name" it uses the
request-style call from then on (one wasted round trip per client). The requests
name no catalog: HMS 3+ answers from its default one (``hive``), as for the old
calls.

Not thread-safe: give each thread its own client (connections are cheap).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import thriftpy2.thrift
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.transport import TBufferedTransportFactory, TSocket, TTransportException

import idl
from catalogd.addresses import parse_metastore_uri
from subscriber.protocol.errors import (
    InvalidRequestError,
    MetastoreError,
    MetastoreUnavailableError,
    NotFoundError,
)

__all__ = ["MetastoreClient"]

hms = idl.hive_metastore

_TRANSPORT_ERRORS = (TTransportException, OSError, EOFError)
_NOT_FOUND = (hms.NoSuchObjectException, hms.UnknownDBException, hms.UnknownTableException)
_HMS_ERRORS = (
    hms.MetaException,
    hms.AlreadyExistsException,
    hms.InvalidObjectException,
    hms.InvalidOperationException,
    hms.InvalidInputException,
    hms.ConfigValSecurityException,
    thriftpy2.thrift.TApplicationException,
)
# Bytes that do not decode: the rest of the reply is still on the socket.
_GARBLED = (TProtocolException, thriftpy2.thrift.TDecodeException)
# HMS 2.3 answers some calls about a database that no longer exists with this.
_DROPPED_DB_NPE = "NullPointerException"
_MAX_I16 = 32767


class MetastoreClient:
    """One connection to a Hive Metastore, reopened on failure.

    ``timeout_s`` bounds each socket read/write; connecting is bounded by
    ``connect_timeout_s`` (default: the smaller of timeout_s and 10 s). ``sleep``
    is called between retries (inject a fake in tests). The connection opens
    lazily, on the first call.
    """

    def __init__(
        self,
        uri: str,
        *,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
        connect_timeout_s: float | None = None,
    ) -> None:
        self._host, self._port = parse_metastore_uri(uri)
        self.uri = f"thrift://{self._host}:{self._port}"
        if retries < 0 or backoff_s < 0 or timeout_s <= 0:
            raise InvalidRequestError("retries and backoff_s must be >= 0, timeout_s > 0")
        self._timeout_ms = int(timeout_s * 1000)
        self._connect_timeout_ms = int(
            min(timeout_s, 10.0 if connect_timeout_s is None else connect_timeout_s) * 1000
        )
        self._retries = retries
        self._backoff_s = backoff_s
        self._sleep = sleep
        self._client: Any = None
        self._request_style = False

    # -- connection

    @property
    def raw(self) -> Any:
        """The thriftpy2 client of the current connection (opened if needed).

        For tests and one-off calls: no retries, no error mapping.
        """
        return self._connect()

    def _connect(self) -> Any:
        if self._client is None:
            sock = TSocket(
                self._host,
                self._port,
                socket_timeout=self._timeout_ms,
                connect_timeout=self._connect_timeout_ms,
                socket_family=socket.AF_INET6 if ":" in self._host else socket.AF_INET,
            )
            transport = TBufferedTransportFactory().get_transport(sock)
            transport.open()
            protocol = TBinaryProtocolFactory().get_protocol(transport)
            self._client = thriftpy2.thrift.TClient(hms.ThriftHiveMetastore, protocol)
        return self._client

    def close(self) -> None:
        """Close the connection; the next call opens a new one. Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(*_TRANSPORT_ERRORS):
                client.close()

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the one place calls go through

    def call(
        self, method: str, *args: Any, idempotent: bool = False, what: str | None = None
    ) -> Any:
        """Call HMS ``method`` with the retry and error policy of this module.

        ``what`` names the object for NotFoundError messages ("table db.t").
        Blocks up to about (retries + 1) * timeout_s plus backoff.
        """
        attempt = 0
        while True:
            sent = False
            try:
                client = self._connect()
                sent = True
                return getattr(client, method)(*args)
            except _TRANSPORT_ERRORS as exc:
                self.close()  # a half-read reply poisons the socket: never reuse it
                if attempt >= self._retries or (sent and not idempotent):
                    raise MetastoreUnavailableError(
                        f"Hive Metastore at {self.uri} unreachable: {method} failed after "
                        f"{attempt + 1} attempt(s): {exc}"
                    ) from exc
                self._sleep(self._backoff_s * 2**attempt)
                attempt += 1
            except _GARBLED as exc:
                self.close()
                raise MetastoreError(
                    f"Hive Metastore at {self.uri}: {method} returned undecodable data: {exc}"
                ) from exc
            except _NOT_FOUND as exc:
                raise NotFoundError(_not_found(what or method, exc)) from exc
            except _HMS_ERRORS as exc:
                message = getattr(exc, "message", None) or repr(exc)
                if what and _DROPPED_DB_NPE in message and isinstance(exc, hms.MetaException):
                    raise NotFoundError(_not_found(what, exc)) from exc
                raise MetastoreError(
                    f"Hive Metastore at {self.uri}: {method} failed: {message}"
                ) from exc

    def _read(self, method: str, *args: Any, what: str | None = None) -> Any:
        return self.call(method, *args, idempotent=True, what=what)

    # -- databases and tables

    def get_all_databases(self) -> list[str]:
        return list(self._read("get_all_databases"))

    def get_database(self, name: str) -> Any:
        """Return the ``Database``; raises NotFoundError if it does not exist."""
        return self._read("get_database", name, what=f"database {name}")

    def get_all_tables(self, db: str) -> list[str]:
        """Return the table and view names of ``db`` ([] for an unknown database)."""
        return list(self._read("get_all_tables", db, what=f"database {db}"))

    @property
    def request_style(self) -> bool:
        """Whether this server lacks ``get_table`` (HMS 4), learnt from its answer."""
        return self._request_style

    def _old_call(self, method: str, *args: Any, what: str) -> tuple[bool, Any]:
        """``(True, answer)`` of ``method``, or ``(False, None)`` if the server lacks it."""
        if self._request_style:
            return False, None
        try:
            return True, self._read(method, *args, what=what)
        except MetastoreError as exc:
            cause = exc.__cause__
            if not (
                isinstance(cause, thriftpy2.thrift.TApplicationException)
                and cause.type == thriftpy2.thrift.TApplicationException.UNKNOWN_METHOD
            ):
                raise
        self._request_style = True
        return False, None

    def get_table(self, db: str, table: str) -> Any:
        """Return the ``Table``; raises NotFoundError if it (or its database) is missing."""
        what = f"table {db}.{table}"
        done, answer = self._old_call("get_table", db, table, what=what)
        if done:
            return answer
        request = hms.GetTableRequest(dbName=db, tblName=table)
        return self._read("get_table_req", request, what=what).table

    def get_table_objects_by_name(self, db: str, names: Sequence[str]) -> list[Any]:
        """Return the ``Table`` of each existing name (missing ones are left out).

        Raises NotFoundError if the database does not exist.
        """
        what = f"database {db}"
        done, answer = self._old_call("get_table_objects_by_name", db, list(names), what=what)
        if done:
            return list(answer)
        request = hms.GetTablesRequest(dbName=db, tblNames=list(names))
        return list(self._read("get_table_objects_by_name_req", request, what=what).tables or [])

    # -- partitions

    def get_partition_names(self, db: str, table: str, max: int = -1) -> list[str]:
        """Return partition names (``k=v/k=v``, escaped), at most ``max`` (-1: all)."""
        try:
            return list(
                self._read("get_partition_names", db, table, _i16(max), what=f"table {db}.{table}")
            )
        except MetastoreError:
            # HMS 2.3 fails with an internal error, not NoSuchObject, for a missing table.
            self.get_table(db, table)  # raises NotFoundError if that is the cause
            raise

    def get_partitions_by_names(self, db: str, table: str, names: Sequence[str]) -> list[Any]:
        """Return the ``Partition`` of each existing name (missing ones are left out)."""
        return list(
            self._read(
                "get_partitions_by_names", db, table, list(names), what=f"table {db}.{table}"
            )
        )

    def iter_partitions(self, db: str, table: str, batch_size: int = 500) -> Iterator[Any]:
        """Yield every ``Partition`` of a table: its names, then batched by-name fetches.

        Partitions dropped between the two steps are skipped; ones added are not seen.
        """
        if batch_size < 1:
            raise InvalidRequestError(f"batch_size must be >= 1, not {batch_size}")
        names = self.get_partition_names(db, table)
        for start in range(0, len(names), batch_size):
            yield from self.get_partitions_by_names(db, table, names[start : start + batch_size])

    def get_partitions_ps(
        self, db: str, table: str, values: Sequence[str], max: int = -1
    ) -> list[Any]:
        """Return partitions matching leading ``values`` ("" matches any value)."""
        return list(
            self._read(
                "get_partitions_ps", db, table, list(values), _i16(max), what=f"table {db}.{table}"
            )
        )

    def get_partition_names_ps(
        self, db: str, table: str, values: Sequence[str], max: int = -1
    ) -> list[str]:
        return list(
            self._read(
                "get_partition_names_ps",
                db,
                table,
                list(values),
                _i16(max),
                what=f"table {db}.{table}",
            )
        )

    def get_partition_by_name(self, db: str, table: str, name: str) -> Any:
        return self._read(
            "get_partition_by_name", db, table, name, what=f"partition {db}.{table}/{name}"
        )

    # -- functions

    def get_functions(self, db: str, pattern: str = "*") -> list[str]:
        return list(self._read("get_functions", db, pattern))

    def get_function(self, db: str, name: str) -> Any:
        return self._read("get_function", db, name, what=f"function {db}.{name}")

    def get_all_functions(self) -> list[Any]:
        return list(self._read("get_all_functions").functions or [])

    # -- roles and privileges

    def get_role_names(self) -> list[str]:
        return list(self._read("get_role_names"))

    def list_roles(self, principal_name: str, principal_type: int) -> list[Any]:
        """Return the ``Role``s granted directly to a principal (``PrincipalType``)."""
        return list(self._read("list_roles", principal_name, principal_type))

    def get_principals_in_role(self, role: str) -> list[Any]:
        """Return the ``RolePrincipalGrant``s of every member of ``role``."""
        request = hms.GetPrincipalsInRoleRequest(roleName=role)
        return list(self._read("get_principals_in_role", request).principalGrants)

    def get_role_grants_for_principal(self, principal_name: str, principal_type: int) -> list[Any]:
        request = hms.GetRoleGrantsForPrincipalRequest(
            principal_name=principal_name, principal_type=principal_type
        )
        return list(self._read("get_role_grants_for_principal", request).principalGrants)

    def list_privileges(
        self, principal_name: str, principal_type: int, hive_object: Any = None
    ) -> list[Any]:
        """Return ``HiveObjectPrivilege``s of a principal, on one object or (None) all."""
        ref = hive_object if hive_object is not None else hms.HiveObjectRef()
        return list(self._read("list_privileges", principal_name, principal_type, ref))

    # -- configuration and notification events

    def get_config_value(self, name: str, default: str) -> str:
        return str(self._read("get_config_value", name, default))

    def get_current_notification_event_id(self) -> int:
        """Return the id of the newest event (0 when the HMS logs none)."""
        return int(self._read("get_current_notificationEventId").eventId)

    def get_next_notification(self, last_event: int, max_events: int) -> list[Any]:
        """Return up to ``max_events`` ``NotificationEvent``s with ids above ``last_event``."""
        request = hms.NotificationEventRequest(lastEvent=last_event, maxEvents=max_events)
        return list(self._read("get_next_notification", request).events or [])


def _i16(value: int) -> int:
    if not -1 <= value <= _MAX_I16:
        raise InvalidRequestError(f"max must be -1 (all) or 0..{_MAX_I16}, not {value}")
    return value


def _not_found(what: str, exc: BaseException) -> str:
    detail = getattr(exc, "message", None) or type(exc).__name__
    return f"{what} not found in the Hive Metastore ({detail})"
