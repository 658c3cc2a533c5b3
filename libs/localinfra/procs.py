"""Process bookkeeping for the local servers: liveness, pid files, signals, locks.

Liveness is read from ``/proc`` rather than from ``kill(pid, 0)`` because a
killed server whose parent never reaps it (a detached process reparented to an
init that does not reap, as in some containers) lingers as a zombie, and
``kill(pid, 0)`` succeeds on zombies.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

_PROC = Path("/proc")


def _reap(pid: int) -> None:
    """Collect the exit status of ``pid`` if it is our own child, so it does not stay a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def pid_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    if pid <= 0:
        return False
    _reap(pid)
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        # No /proc (not Linux): fall back to the signal probe.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ")".
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    """The argument vector of ``pid``, or an empty list when it cannot be read."""
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def processes_in_dir(directory: Path) -> list[int]:
    """Live processes whose working directory is ``directory``.

    PostgreSQL server processes all run with the data directory as their
    working directory, so this finds the orphans of a killed postmaster.
    """
    target = directory.resolve()
    found: list[int] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == target and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to exit; True when it did."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    return True


def terminate(pid: int, timeout: float, sig: signal.Signals = signal.SIGTERM) -> None:
    """Send ``sig`` to ``pid``, then SIGKILL if it has not exited within ``timeout`` seconds."""
    if not pid_alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    if wait_gone(pid, timeout):
        return
    logger.warning("process %s ignored %s for %.1fs; sending SIGKILL", pid, sig.name, timeout)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_gone(pid, 5.0)


def read_pid(path: Path) -> int | None:
    """The pid on the first line of ``path``, or None when absent or unreadable."""
    try:
        first = path.read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return int(first) if first.isdigit() else None


def write_pid(path: Path, pid: int) -> None:
    """Write ``pid`` to ``path`` atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{pid}\n")
    tmp.replace(path)


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` so concurrent starts of one server serialise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
