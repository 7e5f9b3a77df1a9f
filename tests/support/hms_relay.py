"""A counting relay in front of a real HMS: what reaches the metastore, by method.

:class:`CountingRelay` listens on a free loopback port, opens one upstream
connection per client connection and copies whole Thrift messages both ways
(delimited with :func:`subscriber.metastore.framing.message_end`), counting each
call's method name. Tests and benchmarks point clients (Spark, the HMS
endpoint, catalogd) at :attr:`uri` and read :meth:`counts`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter

from subscriber.metastore import framing
from subscriber.metastore.upstream import parse_uri


class CountingRelay:
    """Relays HMS Thrift calls to ``upstream`` and counts them. Thread-safe."""

    def __init__(self, upstream: str) -> None:
        self.upstream = parse_uri(upstream)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"thrift://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._socks: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="hms-relay", daemon=True)
        self._thread.start()

    def counts(self) -> Counter[str]:
        """Calls seen so far, by method name."""
        with self._lock:
            return Counter(self._counts)

    def reset(self) -> Counter[str]:
        """Return the counts and start again from zero."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
            return counts

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    def __enter__(self) -> CountingRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=600)
        except OSError:
            client.close()  # HMS down: the client sees a dropped connection
            return
        with self._lock:
            self._socks += [client, upstream]
        buf, reply_buf = bytearray(), bytearray()
        try:
            while True:
                message = _read_message(client, buf)
                if message is None:
                    return
                header = framing.read_header(message)
                assert header is not None
                with self._lock:
                    self._counts[header.name] += 1
                upstream.sendall(message)
                if header.type == framing.ONEWAY:
                    continue
                reply = _read_message(upstream, reply_buf)
                if reply is None:
                    return
                client.sendall(reply)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()


def _read_message(sock: socket.socket, buf: bytearray) -> bytes | None:
    while True:
        end = framing.message_end(buf)
        if end is not None:
            message = bytes(buf[:end])
            del buf[:end]
            return message
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        buf += chunk
