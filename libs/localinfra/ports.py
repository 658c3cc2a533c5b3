"""Loopback ports for the local servers.

A port found by binding to port 0 comes from the kernel's ephemeral range, the
same range every outgoing connection draws its local port from: between the
moment it is handed out and the moment its server binds it, any client socket
on the machine may take it (seen with parallel test workers, each running
crawls with hundreds of connections). So :func:`free_port` picks ports outside
that range, where only listening servers live, and reserves each one it hands
out with a file under a shared folder, so that two processes (two test workers,
two local stacks) never receive the same port while the first has not bound it
yet. A reservation lapses after :data:`RESERVATION_SECONDS`; by then its server
listens on the port, which the bind check sees.
"""

from __future__ import annotations

import errno
import os
import random
import socket
import tempfile
import time
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)
LOWEST_PORT = 10000
RESERVATION_SECONDS = 600.0
RESERVATIONS = Path(tempfile.gettempdir()) / "trawl-ports"
ATTEMPTS = 200

_handed_out: set[int] = set()


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default when unreadable)."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return (low, high) if 0 < low <= high <= 65535 else DEFAULT_EPHEMERAL


def candidate_ranges(ephemeral: tuple[int, int]) -> list[range]:
    """Ports outside the ephemeral range, from :data:`LOWEST_PORT` up (the whole range if none is left)."""
    low, high = ephemeral
    ranges = [r for r in (range(LOWEST_PORT, low), range(high + 1, 65536)) if len(r) >= 1000]
    return ranges or [range(LOWEST_PORT, 65536)]


def _reserve(port: int, folder: Path, now: float) -> bool:
    """Creates the port's reservation file; False when another process holds a live one."""
    path = folder / str(port)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            try:
                if now - path.stat().st_mtime < RESERVATION_SECONDS:
                    return False
                path.unlink()  # a lapsed reservation: take it over
            except FileNotFoundError:
                pass
    return False


def _bindable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port(host: str = "127.0.0.1", *, reservations: Path = RESERVATIONS,
              ephemeral: tuple[int, int] | None = None, rng: random.Random | None = None) -> int:
    """A TCP port on ``host`` that nothing listens on, outside the ephemeral range, reserved for the caller.

    No process gets the same port again for :data:`RESERVATION_SECONDS` (and this
    process never does); a server started on it still fails loudly if something
    outside Trawl took it meanwhile.
    """
    choose = rng or random.SystemRandom()
    ranges = candidate_ranges(ephemeral or ephemeral_range())
    reservations.mkdir(parents=True, exist_ok=True)
    for _ in range(ATTEMPTS):
        span = choose.choice(ranges)
        port = choose.randrange(span.start, span.stop)
        if port in _handed_out or not _bindable(host, port):
            continue
        if not _reserve(port, reservations, time.time()):
            continue
        _handed_out.add(port)
        return port
    raise OSError(f"no free port on {host} outside the ephemeral range after {ATTEMPTS} attempts")


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
