"""Imported by the load workers' fork server only: runs the daemon's main script there, once.

multiprocessing asks its fork server to import ``__main__`` before forking (when
``"__main__"`` is preloaded), but CPython 3.11 passes the script's path under a key
the fork server does not read (``init_main_from_path`` vs ``main_path``), so the
fork server skips it and *every* worker runs the script again as ``__mp_main__``:
measured, 0.05 s per worker for the ``catalogd`` console script and 0.27 s for a
benchmark script. :class:`~catalogd.freshness.load_workers.LoadWorkers` puts the
path in :data:`MAIN_PATH` of the environment the fork server inherits; importing
the script here gives every worker a ``__main__`` with that ``__file__``, which
multiprocessing then leaves alone (``spawn._fixup_main_from_path``). On a Python
that fixed it, the fork server has imported it already and this does nothing.
"""

from __future__ import annotations

import os
from multiprocessing import spawn

MAIN_PATH = "CATALOGD_FORKSERVER_MAIN"

_path = os.environ.get(MAIN_PATH)
if _path:
    spawn.import_main_path(_path)
