"""Imported by the load workers' fork server only: gives it a stand-in ``__main__``.

A process that multiprocessing starts runs the parent's main script again (as
``__mp_main__``) unless its ``__main__`` already has that script's ``__file__``;
the fork server was asked to import it once for all workers (``"__main__"`` in
the preload), but CPython 3.11 passes the path under a key the fork server does not
read (``init_main_from_path`` vs ``main_path``), so every worker ran the script
again. The workers need none of it: what they unpickle (the task functions of
:mod:`catalogd.loading.workers`, the source factory) lives in catalogd's own
modules, never in a main script. So the fork server takes a stand-in module with the
script's ``__file__`` (from :data:`MAIN_PATH` in the environment, which
:class:`~catalogd.loading.workers.LoadWorkers` sets), and no worker runs the
script. Measured: 0.05 s per worker for the ``catalogd`` console script, 0.27 s for
a benchmark script; a load's first worker task waited for it.
"""

from __future__ import annotations

import os
import sys
import types

# Not CATALOGD_*: that prefix is catalogd's configuration, which refuses unknown names
# (a catalogd started from a process that had started load workers refused to run).
MAIN_PATH = "_CATALOGD_FORKSERVER_MAIN"

_path = os.environ.get(MAIN_PATH)
if _path and getattr(sys.modules["__main__"], "__file__", None) != _path:
    _stand_in = types.ModuleType("__mp_main__")
    _stand_in.__file__ = _path
    sys.modules["__main__"] = sys.modules["__mp_main__"] = _stand_in
