"""The load workers' pool, without processes: how the fork server is told the main script."""

from __future__ import annotations

import pytest

from catalogd.loading.pool import PRELOAD, main_script_of, preload_entry


@pytest.mark.parametrize(
    "script", ["/usr/bin/catalogd", "/tmp/a dir/bench.v2.py", "/srv/caf\u00e9/x", "/b/\udcff"]
)
def test_the_preload_entry_names_the_script_as_one_dotless_module_name(script: str) -> None:
    entry = preload_entry(script)
    assert entry.isidentifier()  # imported as one name: no parent package tried first
    assert main_script_of(entry) == script


@pytest.mark.parametrize("name", [*PRELOAD, "_catalogd_main_script_zz", "__main__"])
def test_other_module_names_name_no_script(name: str) -> None:
    assert main_script_of(name) is None


def test_the_fork_server_reads_the_entry_after_the_module_that_understands_it() -> None:
    assert PRELOAD[0] == "catalogd.loading.forkserver_main"
