"""A PostgreSQL server for the local stack and the tests, run from a data folder.

Layout, for ``data_dir = ROOT/pgdata``::

    ROOT/pgdata/          the cluster (initdb'd on first start)
    ROOT/pgdata.run/      postgres.log and the Unix socket, owned by the server's user
    ROOT/pgdata.lock      serialises concurrent ensure_started()/stop() calls

The server is started with ``pg_ctl`` and detaches from the caller, so it
outlives the process that started it; any later process can find it again
from ``postmaster.pid``. Authentication is ``trust``, and the server listens
on loopback only: it is for one machine's local stack and tests.

When the caller is root the server runs as ``os_user`` (created on first use),
because ``initdb`` and ``postgres`` refuse to run as root; every folder above
``data_dir`` must then be traversable by that user (``/tmp`` is; a ``0700``
home directory is not).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Literal

from libs.localinfra import pgadmin, procs
from libs.localinfra.errors import LocalInfraError
from libs.localinfra.osuser import OsUser, server_user
from libs.localinfra.pgbinaries import bin_dir_for

logger = logging.getLogger(__name__)

StopMode = Literal["smart", "fast", "immediate"]

_STOP_SIGNALS: dict[str, signal.Signals] = {
    "smart": signal.SIGTERM,
    "fast": signal.SIGINT,
    "immediate": signal.SIGQUIT,
}
# The kernel limit on a Unix socket path (sun_path) is 108 bytes including the NUL.
_MAX_SOCKET_PATH = 107


class LocalPostgres:
    """One PostgreSQL server on ``host:port`` with its cluster in ``data_dir``.

    ``fast`` trades durability for speed (``fsync``, ``synchronous_commit`` and
    ``full_page_writes`` off): for throwaway test clusters only.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int,
        host: str = "127.0.0.1",
        os_user: str = "trawl-pg",
        database: str = "trawl",
        *,
        fast: bool = False,
        max_connections: int = 200,
        pg_bin_dir: Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.data_dir = data_dir.absolute()
        self.port = port
        self.host = host
        self.os_user = os_user
        self.database = database
        self.fast = fast
        self.max_connections = max_connections
        self.start_timeout = start_timeout
        self._pg_bin_dir = pg_bin_dir
        self.run_dir = self.data_dir.with_name(self.data_dir.name + ".run")
        self.log_file = self.run_dir / "postgres.log"
        self._lock_file = self.data_dir.with_name(self.data_dir.name + ".lock")

    # -- addresses ---------------------------------------------------------

    def dsn(self, database: str | None = None) -> str:
        """The libpq URL of ``database`` (default: the managed database) as superuser ``postgres``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"postgresql://postgres@{host}:{self.port}/{database or self.database}"

    # -- state -------------------------------------------------------------

    def pid(self) -> int | None:
        """The postmaster's pid when a server is running on ``data_dir``, else None."""
        pid = procs.read_pid(self.data_dir / "postmaster.pid")
        if pid is None or not procs.pid_alive(pid):
            return None
        argv = procs.cmdline(pid)
        if argv and not Path(argv[0]).name.startswith("postgres"):
            return None  # the pid was recycled by an unrelated process
        return pid

    def is_running(self) -> bool:
        """True when a postmaster is alive on ``data_dir``."""
        return self.pid() is not None

    def running_port(self) -> int | None:
        """The port the running server listens on, read from ``postmaster.pid``."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            return int(lines[3])
        except (OSError, IndexError, ValueError):
            return None

    # -- lifecycle ---------------------------------------------------------

    def ensure_started(self) -> str:
        """Start the server unless it already runs on ``data_dir``; return the DSN of the database.

        Initialises the cluster on first use, recovers from a stale
        ``postmaster.pid`` left by a killed server, waits until sessions are
        accepted and creates the database if it is missing. Safe to call
        repeatedly and from several processes.
        """
        with procs.file_lock(self._lock_file):
            if self.is_running():
                running = self.running_port()
                if running != self.port:
                    raise LocalInfraError(
                        f"a PostgreSQL server already runs on {self.data_dir} with port {running}, "
                        f"not {self.port}; stop it first"
                    )
                logger.debug("PostgreSQL already running on %s (pid %s)", self.data_dir, self.pid())
            else:
                self._start()
            pgadmin.wait_connectable(self.dsn("postgres"), self.start_timeout)
            pgadmin.create_database(self.dsn("postgres"), self.database)
        return self.dsn()

    def stop(self, mode: StopMode = "fast", timeout: float = 30.0) -> None:
        """Stop the server (``smart`` waits for clients, ``fast`` disconnects them, ``immediate`` aborts).

        Escalates to SIGKILL after ``timeout`` seconds. Does nothing when no
        server is running.
        """
        if not self.data_dir.exists():
            return
        with procs.file_lock(self._lock_file):
            pid = self.pid()
            if pid is None:
                return
            logger.info("stopping PostgreSQL (pid %s, mode %s)", pid, mode)
            procs.terminate(pid, timeout, _STOP_SIGNALS[mode])
            self._kill_orphans()

    # -- internals ---------------------------------------------------------

    def _start(self) -> None:
        started = time.monotonic()
        user = server_user(self.os_user)
        bin_dir = bin_dir_for(user, self._pg_bin_dir)
        self._prepare_dirs(user)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(user, bin_dir)
        self._clear_stale_pidfile()
        self._pg_ctl_start(user, bin_dir)
        logger.info(
            "PostgreSQL started on %s:%s (data %s) in %.2fs",
            self.host,
            self.port,
            self.data_dir,
            time.monotonic() - started,
        )

    def _prepare_dirs(self, user: OsUser) -> None:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if not user.can_reach(self.data_dir):
            raise LocalInfraError(
                f"user {user.name} cannot reach {self.data_dir}: every folder above it must be "
                "traversable (o+x); use a folder under /tmp or /var/lib rather than a private home"
            )
        for folder in (self.data_dir, self.run_dir):
            folder.mkdir(exist_ok=True)
            folder.chmod(0o700 if folder == self.data_dir else 0o755)
            if folder.stat().st_uid != user.uid:
                user.chown(folder, recursive=True)

    def _initdb(self, user: OsUser, bin_dir: Path) -> None:
        if any(self.data_dir.iterdir()):
            raise LocalInfraError(f"{self.data_dir} is neither empty nor a PostgreSQL data folder")
        args = [
            str(bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            # C collation for speed and stable ordering, Unicode-aware case mapping;
            # neither depends on the locales installed on the machine.
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
            "--no-locale",
        ]
        if self.fast:
            args.append("--no-sync")
        self._run(user, args, "initdb")

    def _server_options(self) -> list[str]:
        options = [
            "-p",
            str(self.port),
            "-c",
            f"listen_addresses={self.host}",
            "-c",
            f"max_connections={self.max_connections}",
        ]
        socket_path = self.run_dir / f".s.PGSQL.{self.port}"
        if len(str(socket_path)) <= _MAX_SOCKET_PATH:
            options += ["-k", str(self.run_dir)]
        else:
            logger.warning("%s is too long for a Unix socket; listening on TCP only", socket_path)
            options += ["-c", "unix_socket_directories="]
        if self.fast:
            options += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        return options

    def _pg_ctl_start(self, user: OsUser, bin_dir: Path) -> None:
        args = [
            str(bin_dir / "pg_ctl"),
            "start",
            "-w",
            "-t",
            str(int(self.start_timeout)),
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-o",
            shlex.join(self._server_options()),
        ]
        try:
            self._run(user, args, "pg_ctl start")
        except LocalInfraError as exc:
            raise LocalInfraError(f"{exc}\n--- {self.log_file} ---\n{procs.tail(self.log_file)}") from None

    def _clear_stale_pidfile(self) -> None:
        """Remove what a killed postmaster left behind so that a new one can start.

        Orphaned server processes still attached to the old shared memory make
        the new postmaster refuse to start, so they are killed first. The pid
        and socket lock files are removed because PostgreSQL's own staleness
        check treats a zombie postmaster as alive.
        """
        pidfile = self.data_dir / "postmaster.pid"
        if pidfile.exists():
            logger.warning("recovering %s after an unclean shutdown", self.data_dir)
            self._kill_orphans()
            with contextlib.suppress(FileNotFoundError):
                pidfile.unlink()
        # The Unix socket has its own lock file naming the dead postmaster.
        for lock in self.run_dir.glob(".s.PGSQL.*.lock"):
            owner = procs.read_pid(lock)
            if owner is None or not procs.pid_alive(owner):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                    lock.with_suffix("").unlink()

    def _kill_orphans(self) -> None:
        for pid in procs.processes_in_dir(self.data_dir):
            logger.warning("killing leftover PostgreSQL process %s", pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            procs.wait_gone(pid, 5.0)

    def _run(self, user: OsUser, args: list[str], what: str) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C",
            "LC_ALL": "C",
            "TZ": "UTC",
        }
        kwargs = user.run_kwargs()
        try:
            result = subprocess.run(
                args,
                cwd=self.run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=self.start_timeout + 30,
                check=False,
                **kwargs,  # type: ignore[call-overload]  # user/group switch, empty when not root
            )
        except subprocess.TimeoutExpired:
            raise LocalInfraError(f"{what} did not finish within {self.start_timeout + 30:.0f}s") from None
        if result.returncode != 0:
            raise LocalInfraError(f"{what} failed (exit {result.returncode}): {result.stdout.strip()}")
