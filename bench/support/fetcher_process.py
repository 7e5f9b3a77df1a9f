"""Raw on-demand fetchers for ``bench/fetch_storm.py``: one process, many DEALERs.

::

    cd bench && python -m support.fetcher_process ENDPOINT REPORT CLIENTS TABLES PERIOD_S SECONDS

Each of ``CLIENTS`` DEALER sockets asks catalogd (``TRequest.fetch``) for a random
table's header of ``bench.t0000 .. t{TABLES-1}`` every ``PERIOD_S`` seconds (one
outstanding request per socket, as a subscriber's read would wait), for ``SECONDS``;
the round-trip times go back as JSON on a PUSH socket to ``REPORT``.
"""

from __future__ import annotations

import random
import sys
import time

import zmq

import idl
from subscriber.protocol import codec

svc = idl.catalog_service


def main(
    endpoint: str, report: str, clients: int, tables: int, period: float, seconds: float
) -> None:
    ctx = zmq.Context()
    poller = zmq.Poller()
    socks = []
    for _ in range(clients):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        poller.register(sock, zmq.POLLIN)
        socks.append(sock)
    rng = random.Random()
    sent: dict[zmq.Socket, float] = {}
    due = {s: time.monotonic() + rng.random() * period for s in socks}
    times: list[float] = []
    errors = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = time.monotonic()
        for sock in socks:
            if sock not in sent and now >= due[sock]:
                key = f"TABLE:bench.t{rng.randrange(tables):04d}"
                request = svc.TRequest(request_id=1, fetch=svc.TFetchRequest(keys=[key]))
                sock.send(codec.pack(request))
                sent[sock] = now
        for sock, _ in poller.poll(2):
            answer = codec.unpack(svc.TResponse, sock.recv())
            started = sent.pop(sock)
            if answer.fetched is None:
                errors += 1
            times.append(time.monotonic() - started)
            due[sock] = started + period
    push = ctx.socket(zmq.PUSH)
    push.connect(report)
    push.send_json({"times": times, "errors": errors})
    push.close(linger=5000)
    for sock in socks:
        sock.close()
    ctx.term()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], int(a[2]), int(a[3]), float(a[4]), float(a[5]))
