"""Joiners that take snapshots as fast as a socket reads, in a process of their own.

Run by ``bench/join_bench.py --storm`` (``python -m support.snapshot_drain ENDPOINT``
from ``bench/``). Reads commands on stdin, one a line, ``UNFILTERED FILTERED DB``: it
opens that many DEALER sockets at once, each asking catalogd for a snapshot (all
databases, or ``DB`` and the global objects), receives every frame until the
``TSnapshotEnd``, checks that the number of chunk frames equals its ``chunks``, and
prints one JSON line: each joiner's wall time, frames, bytes and entry count.

Chunks are not decoded (a real subscriber spends ~7 us per partition doing that,
which would pace the server): this is the most a set of joiners can ask of the
server thread at once.
"""

from __future__ import annotations

import json
import sys
import time

import zmq

import idl
from subscriber.protocol import codec

svc = idl.catalog_service


def join_all(context: zmq.Context, endpoint: str, databases: list[list[str] | None]) -> list[dict]:
    poller = zmq.Poller()
    joiners: dict[zmq.Socket, dict] = {}
    started = time.monotonic()
    for n, dbs in enumerate(databases):
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.connect(endpoint)
        request = svc.TRequest(request_id=n + 1, snapshot=svc.TSnapshotRequest(databases=dbs))
        sock.send(codec.pack(request))
        poller.register(sock, zmq.POLLIN)
        joiners[sock] = {"filtered": dbs is not None, "frames": 0, "bytes": 0}
    open_ = set(joiners)
    while open_:
        for sock, _ in poller.poll(60_000) or [(None, 0)]:
            if sock is None:
                raise TimeoutError("catalogd sent nothing for 60 s")
            frame = sock.recv(copy=True)
            info = joiners[sock]
            info["frames"] += 1
            info["bytes"] += len(frame)
            if frame[0] == codec.FLAG_RAW:  # only the small ones: status or end
                response = codec.unpack(svc.TResponse, frame)
                if response.snapshot_end is None:
                    raise RuntimeError(f"catalogd answered {response.status}")
                end = response.snapshot_end
                if end.chunks != info["frames"] - 1:
                    raise RuntimeError(f"{end.chunks} chunks announced, {info['frames'] - 1} seen")
                info.update(entries=end.count, version=end.version)
                info["wall_s"] = time.monotonic() - started
                poller.unregister(sock)
                sock.close(linger=0)
                open_.discard(sock)
    return list(joiners.values())


def main() -> None:
    endpoint = sys.argv[1]
    context = zmq.Context()
    for line in sys.stdin:
        unfiltered, filtered, db = line.split()
        wanted = [None] * int(unfiltered) + [[db]] * int(filtered)
        print(json.dumps(join_all(context, endpoint, wanted)), flush=True)
    context.destroy(linger=0)


if __name__ == "__main__":
    main()
