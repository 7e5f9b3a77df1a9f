"""The Hive Metastore child process: :class:`EmbeddedMetastore` starts and stops it.

``version`` picks the Hive Metastore: ``"2.3"`` runs from the pyspark jars
(:mod:`.wheel`: Java check, catalogd's listener with ``notification_events``,
a DataNucleus-made PostgreSQL/MariaDB schema, the bind agent); ``"3.1"`` and
``"4.x"`` run a release fetched from Maven Central (:mod:`.releases`,
:mod:`.fetch`) with its own schematool and settings (:mod:`.standalone`).
Start-up writes ``hive-site.xml`` and ``log4j2.properties`` (:mod:`.config`),
then runs the JVM (:mod:`.jvm`) on a port
until a real ``get_all_databases`` call answers, retrying a free port another
process took first. HMS 2.3 and 3.1 have no bind-host setting (they would listen on
every interface): with ``bind_loopback`` (default) a small Java agent binds 2.3 to
127.0.0.1 (:mod:`.bind`); without a ``javac`` to build the agent, and on 3.1, it
listens on every interface, and a warning says so; 4.x binds 127.0.0.1 itself.

The JVM dies with its parent (:mod:`.lifeline`: a parent-death signal), and an
orphaned HMS of the same data directory, left by a catalogd killed before, is
stopped before starting. When Derby still refuses (another *running* HMS holds
the database), the error says so, with its pid, and what to do.

Why one module of just over 400 lines: the lifecycle of one HMS JVM (start, probe,
stale-instance clean-up, stop) in one class; configuration, Java discovery, schemas and
the JVM command line are separate modules.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from catalogd.addresses import free_port
from catalogd.hms import listener
from catalogd.hms.embedded.bind import (
    LOOPBACK,
    agent_flag,
    listening_addresses,
)
from catalogd.hms.embedded.config import (
    Backend,
    DerbyBackend,
    hive_site_properties,
    render_hive_site,
    render_log4j2,
)
from catalogd.hms.embedded.java import (
    FAST_START_FLAGS,
    java_version,
    tail_from,
)
from catalogd.hms.embedded.jvm import (
    MAIN_CLASS,
    class_data_flags,
    hms_command,
    probe,
    terminate,
)
from catalogd.hms.embedded.lifeline import holders, stop_stale
from catalogd.hms.embedded.releases import DEFAULT_VERSION, VERSIONS, Installed, installed
from catalogd.hms.embedded.standalone import class_path, ensure_schema, standalone_properties
from catalogd.hms.embedded.wheel import prepare_wheel
from catalogd.lifeline import die_with_parent
from subscriber.protocol.errors import InvalidRequestError, MetastoreUnavailableError

__all__ = ["EmbeddedMetastore"]

log = logging.getLogger(__name__)
_ALL_LINES = 1_000_000
_DERBY_BOOTED = "Another instance of Derby may have already booted the database"
_SYSTEMD_ONLY = frozenset({"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"})
_PORT_IN_USE = "port in use"


class EmbeddedMetastore:
    """A Hive Metastore child process serving ``thrift://127.0.0.1:PORT``.

    Layout of ``data_dir``: ``conf/`` (hive-site.xml, log4j2.properties),
    ``logs/`` (hms.log, hms.out), ``warehouse/``, ``metastore_db/`` (Derby).
    Reusing a ``data_dir`` keeps the catalog; two running instances must not
    share a Derby ``data_dir``.

    ``port=None`` picks a free port (retrying if another process takes it
    first). ``cache_dir`` keeps start-up artefacts between runs (AppCDS archive,
    PostgreSQL DDL, the compiled listener); without it each start does the slow
    path. ``notification_events`` makes the HMS log notification events with
    catalogd's listener (needs ``javac``; its jar goes to ``cache_dir``, else to
    ``data_dir/lib``; 3.1: the stock DbNotificationListener; 4.x: none).
    ``version`` is ``"2.3"``, ``"3.1"`` or ``"4.x"``; the latter two are looked up
    in ``releases_dir`` (default ``~/.cache/catalogd``, :mod:`.releases`), their
    Derby schema template is kept in ``cache_dir``. ``extra_conf`` is applied after
    its settings. Not thread-safe:
    one owner starts and stops it. A forgotten instance is killed when the
    interpreter exits; with ``die_with_parent`` (default) also when the thread
    that started it dies, even by ``kill -9`` (see :mod:`.lifeline`).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        backend: Backend = DerbyBackend(),  # noqa: B008 (a frozen dataclass)
        port: int | None = None,
        java: str = "java",
        cache_dir: str | os.PathLike[str] | None = None,
        fast_start: bool = True,
        extra_conf: Mapping[str, str] = {},
        notification_events: bool = False,
        jvm_args: Sequence[str] = (),
        startup_timeout_s: float = 120.0,
        stop_timeout_s: float = 30.0,
        die_with_parent: bool = True,
        bind_loopback: bool = True,
        version: str = DEFAULT_VERSION,
        releases_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if version not in VERSIONS:
            raise InvalidRequestError(f"HMS version must be one of {', '.join(VERSIONS)}")
        self._version = version
        self._releases_dir = Path(releases_dir) if releases_dir is not None else None
        self._data_dir = Path(data_dir).resolve()
        self._backend = backend
        self._requested_port = port
        self._java = java
        self._cache_dir = Path(cache_dir).resolve() if cache_dir is not None else None
        self._fast_start = fast_start
        self._extra_conf = dict(extra_conf)
        self._notification_events = notification_events
        self._jvm_args = tuple(jvm_args)
        self._startup_timeout_s = startup_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._die_with_parent = die_with_parent
        self._bind_loopback = bind_loopback
        self._agent: Path | None = None
        self.stale_stopped: list[int] = []
        """Pids of orphaned HMS JVMs of this data directory stopped by the last start."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._archive: tuple[Path, Path] | None = None  # (being written, final)
        self._finalizer: weakref.finalize | None = None
        self.startup_seconds: float | None = None

    # -- addresses and paths

    @property
    def port(self) -> int:
        """The Thrift port of the running (or last run) HMS.

        Raises InvalidRequestError before the first start().
        """
        if self._port is None:
            raise InvalidRequestError("the embedded metastore has not been started")
        return self._port

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def conf_dir(self) -> Path:
        return self._data_dir / "conf"

    @property
    def warehouse_dir(self) -> Path:
        return self._data_dir / "warehouse"

    @property
    def log_path(self) -> Path:
        return self._data_dir / "logs" / "hms.log"

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def version(self) -> str:
        """Which Hive Metastore runs: ``"2.3"`` (pyspark wheel), ``"3.1"`` or ``"4.x"``."""
        return self._version

    @property
    def notification_events(self) -> bool:
        """Whether this HMS logs notification events (2.3: catalogd's listener, 3.1: the
        stock DbNotificationListener; 4.x never, see :mod:`.releases`)."""
        return self._notification_events and self._version != "4.x"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle

    def __enter__(self) -> EmbeddedMetastore:
        try:
            return self.start()
        except BaseException:  # Ctrl-C while it starts: no JVM left behind
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> EmbeddedMetastore:
        """Start the HMS and block until it answers get_all_databases; returns self.

        Raises MetastoreUnavailableError (java missing or too old, pyspark
        missing, javac missing or failing with ``notification_events``, the HMS
        died or did not answer within startup_timeout_s; the message carries the
        tail of its log) and InvalidRequestError if running.
        """
        if self._proc is not None:
            raise InvalidRequestError("the embedded metastore is already running")
        started = time.monotonic()
        deadline = started + self._startup_timeout_s
        for sub in ("conf", "logs", "warehouse"):
            (self._data_dir / sub).mkdir(parents=True, exist_ok=True)
        if self._version == "2.3":
            classpath, version_text = self._prepare_wheel(deadline)
        else:
            classpath, version_text = self._prepare_release(deadline)
        self.stale_stopped = stop_stale(self._data_dir, MAIN_CLASS, self._stop_timeout_s)
        if self.stale_stopped:
            log.warning(
                "stopped a stale Hive Metastore (pid %s) of %s, left by a catalogd that died",
                ", ".join(map(str, self.stale_stopped)),
                self._data_dir,
            )
        attempts = 3 if self._requested_port is None else 1
        for attempt in range(attempts):
            port = self._requested_port or free_port()
            command = self._command(os.pathsep.join(classpath), version_text)
            outcome = self._launch(command, port, deadline)
            if outcome is None:
                self.startup_seconds = time.monotonic() - started
                if self._agent is not None and listening_addresses(port) - {LOOPBACK}:
                    log.warning(
                        "the embedded Hive Metastore listens beyond loopback on port %d "
                        "(see %s for why the bind agent failed)",
                        port,
                        self._data_dir / "logs" / "hms.out",
                    )
                return self
            if outcome != _PORT_IN_USE:
                raise MetastoreUnavailableError(outcome)
            if attempt == attempts - 1:
                raise MetastoreUnavailableError(
                    f"cannot start the Hive Metastore: port {port} is in use"
                )
        raise AssertionError("unreachable")

    def restart(self) -> EmbeddedMetastore:
        """Start again on the same port after the JVM died (or stop it first); returns self.

        Raises:
            MetastoreUnavailableError: as :meth:`start`.
        """
        self.stop()
        if self._port is not None:
            self._requested_port = self._port  # clients keep the address
        return self.start()

    @property
    def exit_code(self) -> int | None:
        """The JVM's exit code once it exited by itself; None while it runs or if stopped."""
        return None if self._proc is None else self._proc.poll()

    def stop(self) -> None:
        """Stop the HMS: SIGTERM, then SIGKILL after stop_timeout_s. Idempotent; blocks."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        clean = terminate(proc, self._stop_timeout_s)
        if self._archive is not None:
            partial, final = self._archive
            self._archive = None
            if clean and partial.is_file() and partial.stat().st_size > 0:
                partial.replace(final)
            else:
                partial.unlink(missing_ok=True)

    # -- internals

    def _prepare_wheel(self, deadline: float) -> tuple[list[str], str]:
        """HMS 2.3 from the pyspark jars (:mod:`.wheel`), then its hive-site.xml."""
        classpath, version_text, self._agent = prepare_wheel(
            self._backend, java=self._java, data_dir=self._data_dir, conf_dir=self.conf_dir,
            cache_dir=self._cache_dir, notification_events=self._notification_events,
            bind_loopback=self._bind_loopback, deadline=deadline,
        )  # fmt: skip
        self._write_conf()
        return classpath, version_text

    def _prepare_release(self, deadline: float) -> tuple[list[str], str]:
        """HMS 3.1/4.x fetched from Maven (:mod:`.releases`): conf, then its schematool."""
        release = installed(self._version, self._releases_dir)
        _, version_text = java_version(self._java)
        if self._bind_loopback and release.release.bind_host_key is None:
            log.warning("Hive Metastore %s has no bind-host setting: it listens on every "
                        "interface", release.release.hive)  # fmt: skip
        self._write_conf(release)
        ensure_schema(
            release, self._backend, data_dir=self._data_dir, conf_dir=self.conf_dir,
            java=self._java, cache_dir=self._cache_dir,
            timeout_s=max(1.0, deadline - time.monotonic()),
        )  # fmt: skip
        return class_path(release, self._backend), version_text

    def _write_conf(self, release: Installed | None = None) -> None:
        warehouse = f"file:{self.warehouse_dir}"
        if release is not None:
            extra = standalone_properties(
                release, warehouse_uri=warehouse, bind_loopback=self._bind_loopback,
                notification_events=self._notification_events,
            )  # fmt: skip
        else:
            extra = listener.listener_properties() if self._notification_events else {}
        props = hive_site_properties(
            self._backend,
            data_dir=self._data_dir,
            warehouse_uri=warehouse,
            extra={**extra, **self._extra_conf},
        )
        site = self.conf_dir / "hive-site.xml"
        site.touch(mode=0o600)  # it may hold a database password
        site.write_text(render_hive_site(props))
        (self.conf_dir / "log4j2.properties").write_text(render_log4j2(str(self.log_path)))

    def _derby_in_use(self) -> str:
        others = [h for h in holders(self._data_dir, MAIN_CLASS) if h.pid != os.getpid()]
        who = (
            ", ".join(f"pid {h.pid} (started by: {h.parent_command[:80]})" for h in others)
            or "a process this user cannot see"
        )
        return (
            f"the Derby database {self._data_dir / 'metastore_db'} is in use by another "
            f"running Hive Metastore: {who}. Stop that catalogd (or process), or give this "
            "one another --data-dir; Derby admits one Hive Metastore per database."
        )

    def _command(self, classpath: str, version_text: str) -> list[str]:
        flags = [*FAST_START_FLAGS] if self._fast_start else []
        flags += self._jvm_args
        if self._agent is not None:
            flags.append(agent_flag(self._agent))
            # AppCDS refuses to write an archive with an agent loaded unless told to.
            flags += ["-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent"]
        if self._fast_start and self._cache_dir is not None:
            cds_flags, self._archive = class_data_flags(
                self._cache_dir, classpath, version_text, flags, id(self)
            )
            flags += cds_flags
        return hms_command(
            self._java, flags, conf_dir=self.conf_dir, data_dir=self._data_dir, classpath=classpath
        )

    def _launch(self, base_cmd: list[str], port: int, deadline: float) -> str | None:
        """Spawn the JVM on ``port``; None once it answers, else why it failed."""
        out_path = self._data_dir / "logs" / "hms.out"
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        # systemd's notify variables are for catalogd alone, never for its child.
        env = {k: v for k, v in os.environ.items() if k not in _SYSTEMD_ONLY}
        env["HIVE_CONF_DIR"] = str(self.conf_dir)
        with out_path.open("wb") as out:
            # A new session: a terminal's Ctrl-C reaches us, and we stop the JVM cleanly.
            proc = subprocess.Popen(
                [*base_cmd, "-p", str(port)],
                cwd=self._data_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent if self._die_with_parent else None,  # noqa: PLW1509
            )
        self._proc, self._port = proc, port
        self._finalizer = weakref.finalize(self, terminate, proc, 5.0)
        reason = "not probed yet"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.stop()
                # Markers anywhere in this start's output (Derby's XSDB6 comes early,
                # followed by a long stack trace); the tail is for the message.
                whole = tail_from(self.log_path, log_offset, _ALL_LINES) + "\n"
                whole += tail_from(out_path, 0, _ALL_LINES)
                log = tail_from(self.log_path, log_offset) + "\n" + tail_from(out_path, 0, 15)
                if "Address already in use" in whole or "Could not create ServerSocket" in whole:
                    return _PORT_IN_USE
                if _DERBY_BOOTED in whole:
                    return self._derby_in_use()
                return (
                    f"the Hive Metastore exited with code {proc.returncode} during start-up"
                    f"; end of {self.log_path}:\n{log}"
                )
            reason = probe(port, timeout_s=5.0) or ""
            if not reason:
                return None
            time.sleep(0.1)  # between real probes; readiness is the probe, not the sleep
        self.stop()
        return (
            f"the Hive Metastore did not answer on port {port} within "
            f"{self._startup_timeout_s:.0f} s (last probe: {reason}); end of "
            f"{self.log_path}:\n{tail_from(self.log_path, log_offset)}"
        )
