"""CURVE sync rounds and context shutdowns in a loop: none may hang.

Each round is what the daemon does with keys (``Security``: a context of its own,
the ZAP thread, a CURVE server on it), a subscriber joining over CURVE and a stray
peer failing its handshake (a plaintext DEALER, as a leftover process of another
run would be); then the shutdown in the daemon's order: the subscriber, the server
thread's sockets, the ZAP thread, the context (``Security.close``). The rounds run
in a child process so that a hang is a timeout here (with the child's stacks on
stderr, from ``faulthandler``), never a hung test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 25

CHILD = textwrap.dedent(
    """
    import faulthandler, shutil, sys
    from pathlib import Path

    import zmq

    from catalogd.security import contexts
    from catalogd.security.authenticator import ADMIN, SUBSCRIBERS, KeyAuthenticator
    from catalogd.security.curve import CurveServer
    from catalogd.security.keys import generate, load_server_keys
    from catalogd.security.runtime import Security
    from catalogd.server.thread import CatalogServer, ServerConfig
    from subscriber.api import CatalogSubscriber

    faulthandler.dump_traceback_later(float(sys.argv[3]), exit=True)
    keys, rounds = Path(sys.argv[1]), int(sys.argv[2])
    for name in ("server", "alice"):
        generate(name, keys)
    for domain in ("subscribers", "admin"):
        (keys / domain).mkdir()
    shutil.copy(keys / "alice.key", keys / "subscribers")
    server_keys = load_server_keys(keys / "server.key_secret")
    stray_context = zmq.Context()
    for n in range(rounds):
        context = zmq.Context()
        directories = {SUBSCRIBERS: keys / "subscribers", ADMIN: keys / "admin"}
        authenticator = KeyAuthenticator(context, directories)
        authenticator.start()
        curve = CurveServer(server_keys.public, server_keys.secret)
        security = Security(context=context, curve=curve, authenticator=authenticator)
        config = ServerConfig(
            bind="tcp://127.0.0.1:*", pub_bind="tcp://127.0.0.1:*", curve=security.server_curve
        )
        server = CatalogServer(config, context=context)
        server.commit({f"TABLE:db.t{i}": b"t" for i in range(n % 3 * 50)})
        server.start()
        stray = stray_context.socket(zmq.DEALER)
        stray.connect(server.endpoint)
        subscriber = CatalogSubscriber(
            server.endpoint, server_key=keys / "server.key", client_key=keys / "alice.key_secret"
        )
        subscriber.start()
        subscriber.wait_synced(30)
        subscriber.close()
        server.close()
        security.close()
        stray.close(linger=0)
    stray_context.term()
    print(f"rounds {rounds} abandoned {contexts.abandoned}", flush=True)
    """
)


def test_curve_sync_rounds_and_shutdowns_never_hang(tmp_path: Path) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path), str(ROUNDS), "100"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=110,
        )
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - the failure being guarded
        pytest.fail(f"CURVE shutdown loop hung:\n{exc.stderr}")
    assert done.returncode == 0, done.stderr
    rounds, abandoned = done.stdout.split()[1::2]
    assert int(rounds) == ROUNDS
    # A context libzmq fails to reap is left behind within its bound, not waited for
    # forever (catalogd.security.contexts); the count is there to be read, not asserted.
    print(f"{rounds} rounds, {abandoned} contexts left to libzmq")
