"""Binding the embedded HMS to loopback: a small Java agent, and a check of where it listens.

HMS 2.3 has no bind-host setting (``HiveMetaStore.startMetaStore`` calls
``HiveAuthUtils.getServerSocket(null, port)``: every interface; checked in the
2.3.10 jar of the pyspark wheel). ``LoopbackAgent.java`` (next to
:mod:`catalogd.hms.java`) is a ``-javaagent`` that rewrites that one method as
it loads, so a null host becomes ``127.0.0.1``. :func:`agent_jar` compiles it
once (:func:`catalogd.hms.javac.compiled_jar`, against the wheel's jars, which carry
the ASM it uses) into the cache directory; :func:`listening_addresses` reads
``/proc/net/tcp*`` to tell where a port is actually listened on, so the claim
is checked, not assumed.
"""

from __future__ import annotations

from pathlib import Path

from catalogd.hms.javac import compiled_jar

__all__ = ["AGENT_CLASS", "LOOPBACK", "agent_flag", "agent_jar", "listening_addresses"]

AGENT_CLASS = "catalogd.hms.LoopbackAgent"
_SOURCE = "LoopbackAgent.java"
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
LOOPBACK = "0100007F"
"""127.0.0.1 as /proc/net/tcp spells it (an IPv4-mapped one in tcp6 is reported so too)."""
_V4_MAPPED = "0000000000000000FFFF0000"


def agent_flag(jar: Path, host: str = "127.0.0.1") -> str:
    """The JVM flag that loads the agent, binding the HMS to ``host``."""
    return f"-javaagent:{jar}={host}"


def agent_jar(jars: Path, cache_dir: Path, *, java: str = "java", timeout_s: float = 120.0) -> Path:
    """A jar with the compiled agent (``cache_dir/hms-bind-agent-<hash>.jar``), compiled
    unless cached. Blocks a few seconds when compiling.

    Raises:
        MetastoreUnavailableError: no javac, or it failed (with its output).
    """
    return compiled_jar(
        _SOURCE,
        jars,
        cache_dir,
        name="hms-bind-agent",
        depends_on="xbean-asm*.jar",
        what="the HMS bind agent",
        manifest=f"Premain-Class: {AGENT_CLASS}\r\n",
        java=java,
        timeout_s=timeout_s,
    )


def listening_addresses(port: int) -> set[str]:
    """The local addresses (as ``/proc/net/tcp*`` spells them, hex) listening on ``port``.

    ``0100007F`` is 127.0.0.1 (also when IPv4-mapped in ``tcp6``); ``00000000`` (or the
    IPv6 all-zero) is every interface.
    Empty when nothing listens or there is no ``/proc``.
    """
    found = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == _LISTEN and int(hex_port, 16) == port:
                # Java listens dual-stack: 127.0.0.1 shows as ::ffff:127.0.0.1 in tcp6.
                found.add(address.removeprefix(_V4_MAPPED))
    return found
