"""Service processes of the local stack, and the supervisor that keeps them running.

``Supervisor`` runs as its own detached process (``python -m cli.stack.supervisor``):
it starts every service with its environment, restarts one that dies (with backoff),
and on SIGTERM forwards SIGTERM to all of them, waits for their drain, then SIGKILLs
what is left. Tests use :class:`ServiceProcess` directly to start, kill and restart,
and may run a :class:`Supervisor` over them in a thread (``run(install_signals=False)``).

A service exits with status 1 when it cannot make progress (a broker that lost its data
or stays away: ``libs/common/service.py``); the supervisor starts it again after
``1, 2, 4, 8, 10`` seconds. The backoff starts over for a process that ran for
``STEADY_SECONDS``, so that one outage long ago does not slow the next recovery, and stays
short, so that a service is back soon after what it waited for (a service waits for an
unreachable dependency itself at start: ``TRAWL_STARTUP_WAIT_SECONDS``).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

STEADY_SECONDS = 60.0
"""A process that ran this long before it exited is restarted after the shortest backoff."""

MAX_BACKOFF = 10.0
"""Longest pause before a process that keeps exiting is started again."""


class ServiceProcess:
    def __init__(self, name: str, env: Mapping[str, str], log_path: Path, module: str | None = None,
                 pid_file: Path | None = None) -> None:
        self.name = name
        self.pid_file = pid_file
        self.module = module or f"services.{name}"
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.started_at = 0.0  # time.monotonic() of the last start

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module], env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.started_at = time.monotonic()
        if self.pid_file is not None:
            self.pid_file.write_text(str(self.proc.pid))
        log.info("started %s (pid %s)", self.name, self.proc.pid)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.alive():
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait for the drain, SIGKILL if it takes too long. Returns the exit code."""
        if self.proc is None:
            return None
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %ss; killing it", self.name, timeout)
                self.proc.kill()
                self.proc.wait()
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
        return self.proc.returncode


class Supervisor:
    def __init__(self, processes: list[ServiceProcess], drain_timeout: float = 30.0) -> None:
        self.processes = processes
        self.drain_timeout = drain_timeout
        self._stopping = False

    def request_stop(self, *_: object) -> None:
        self._stopping = True

    def run(self, install_signals: bool = True, start: bool = True, stop: bool = True) -> None:
        """Starts the processes (``start``), restarts those that die until asked to stop, then stops them
        (``stop``). A test running it in a thread passes ``install_signals=False`` and calls ``request_stop``."""
        if install_signals:
            signal.signal(signal.SIGTERM, self.request_stop)
            signal.signal(signal.SIGINT, self.request_stop)
        if start:
            for p in self.processes:
                p.start()
        next_start: dict[str, float] = {}
        while not self._stopping:
            time.sleep(0.5)
            for p in self.processes:
                if p.alive() or self._stopping:
                    continue
                if p.name not in next_start:
                    if time.monotonic() - p.started_at >= STEADY_SECONDS:
                        p.restarts = 0
                    next_start[p.name] = time.monotonic() + min(MAX_BACKOFF, 2.0 ** min(p.restarts, 5))
                if time.monotonic() >= next_start[p.name]:
                    code = p.proc.returncode if p.proc else None
                    log.warning("%s exited with %s; restarting", p.name, code)
                    p.restarts += 1
                    p.start()
                    next_start.pop(p.name, None)
        if not stop:
            return
        for p in self.processes:
            p.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.drain_timeout
        for p in self.processes:
            p.stop(timeout=max(0.1, deadline - time.monotonic()))


def owned_partitions(service_log: Path) -> set[tuple[str, int]]:
    """The partitions a service process owns now (topic, number), replayed from its log's ``assigned`` and
    ``revoked`` lines; none when there is no log yet.

    (The broker's own view is not available: Tansu describes a group without its members.) Eager
    assignment revokes and assigns everything, cooperative assignment only what moves; replaying
    both gives the current ownership. The log of a restarted process starts over at its ``started`` line.
    """
    owned: set[tuple[str, int]] = set()
    text = service_log.read_text(errors="replace") if service_log.exists() else ""
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        msg = str(entry.get("msg", ""))
        if entry.get("logger") == "libs.common.service" and msg.endswith(" started"):
            owned.clear()
        elif entry.get("logger") == "libs.common.kafka.consumer" and msg.startswith(("assigned [", "revoked [")):
            verb, listed = msg.split(" ", 1)
            parts = set()
            for name in ast.literal_eval(listed):
                topic, number = name[:-1].rsplit("[", 1)
                parts.add((topic, int(number)))
            owned = owned | parts if verb == "assigned" else owned - parts
    return owned
