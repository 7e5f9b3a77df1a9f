"""Imported by the load workers' fork server, first of its preload: no worker reruns the script.

A process that multiprocessing starts runs the parent's main script again (as
``__mp_main__``) unless its ``__main__`` already has that script's ``__file__``;
the fork server was asked to import it once for all workers (``"__main__"`` in
the preload), but CPython 3.11 passes the path under a key the fork server does not
read (``init_main_from_path`` vs ``main_path``), so every worker ran the script
again. The workers need none of it: what they unpickle (the tasks of
:mod:`catalogd.loading.tasks`, the source factory) lives in catalogd's own modules,
never in a main script. Measured: 0.05 s per worker for the ``catalogd`` console
script, 0.27 s for a benchmark script; a load's first worker task waited for it.

So the daemon names its script in the preload, as one more "module" that does not
exist (:func:`catalogd.loading.pool.preload_entry`): the fork server imports its
preload in order and skips what fails to import. This module, imported before it,
adds an import finder that recognizes that name and gives the fork server's
``__main__`` the script's ``__file__`` (:func:`_claim_main_script`); every worker
forked afterwards then finds its main script loaded already. No environment
variable, no state shared with the daemon beyond the preload list.

Imported anywhere else (the daemon imports nothing of it), it only adds that
finder, which answers no import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

from catalogd.loading.pool import main_script_of


def _claim_main_script(path: str) -> None:
    """Make this process's ``__main__`` claim to be the script at ``path``.

    Relies on a CPython detail (``multiprocessing.spawn._fixup_main_from_path``,
    3.8-3.13): a new process skips running the parent's main script when its
    ``__main__.__file__`` already equals the script's path. Without this every
    worker the fork server forks runs the daemon's main script again as
    ``__mp_main__`` (its imports, and whatever a script does outside its
    ``if __name__ == "__main__"``). The fork server's ``__main__`` is the
    ``python -c`` module that started it, which has no file of its own.
    """
    main = sys.modules["__main__"]
    if getattr(main, "__file__", None) != path:
        main.__file__ = path


class _MainScriptFinder(importlib.abc.MetaPathFinder):
    """Sees the preload entry that names the main script; finds no module."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        script = main_script_of(fullname)
        if script is not None:
            _claim_main_script(script)
        return None


# Last: asked only about names no other finder knows.
if not any(isinstance(f, _MainScriptFinder) for f in sys.meta_path):
    sys.meta_path.append(_MainScriptFinder())
