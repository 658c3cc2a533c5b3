"""CPU time and memory of running processes, read from /proc (Linux).

A benchmark names each part of the system it watches (a service, PostgreSQL, the broker)
by a root pid; a part's processes are that pid and, with ``children``, every process whose
parent it is (PostgreSQL's postmaster forks a backend per connection). A :class:`Sampler`
thread reads them every ``interval`` seconds and keeps, per part:

* CPU seconds (user + system) of the part's live processes plus what its root collected
  from children it reaped (``cutime`` + ``cstime``), so a backend that exited still counts;
* peak memory: the largest sum, over one sample, of the processes' proportional set size
  (PSS, ``smaps_rollup``: shared pages divided among the processes sharing them, so
  PostgreSQL's shared buffers are not counted once per backend), and for a single process
  its own high-water mark (``VmHWM``) when that is larger.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    cpu_seconds: float  # utime + stime
    children_cpu_seconds: float  # cutime + cstime: children it reaped


def read_stat(pid: int, tid: int | None = None) -> ProcStat | None:
    """Process ``pid``'s counters, or those of its thread ``tid``; None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces
    ticks = [int(v) for v in fields[11:15]]  # utime stime cutime cstime (fields 14-17)
    return ProcStat(pid, int(fields[1]), (ticks[0] + ticks[1]) / CLOCK_TICKS, (ticks[2] + ticks[3]) / CLOCK_TICKS)


def _status_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return _status_kib(pid, "VmRSS")  # no smaps_rollup (old kernel): resident size


def peak_rss_kib(pid: int) -> int:
    return _status_kib(pid, "VmHWM")


def children_of(parent: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None and stat.ppid == parent:
                found.append(stat.pid)
    return found


@dataclass
class PartUsage:
    """What one part used: CPU seconds since the sampler's mark, peak memory in MiB."""

    name: str
    root: int
    children: bool
    cpu_at_mark: float = 0.0
    cpu_now: float = 0.0
    peak_mib: float = 0.0
    processes: int = 1

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_now - self.cpu_at_mark


@dataclass
class Sampler:
    """Samples named parts in a background thread; ``mark()`` zeroes the CPU counters."""

    parts: dict[str, tuple[int, bool]]  # name -> (root pid, count its children)
    interval: float = 0.5
    usage: dict[str, PartUsage] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.usage = {name: PartUsage(name, pid, kids) for name, (pid, kids) in self.parts.items()}

    def sample(self) -> None:
        with self._lock:
            for part in self.usage.values():
                pids = [part.root, *(children_of(part.root) if part.children else [])]
                stats = [s for s in map(read_stat, pids) if s is not None]
                if not stats:
                    continue
                root = stats[0] if stats[0].pid == part.root else None
                cpu = sum(s.cpu_seconds for s in stats) + (root.children_cpu_seconds if root else 0.0)
                part.cpu_now = max(part.cpu_now, cpu)
                memory = sum(pss_kib(s.pid) for s in stats)
                if len(stats) == 1:
                    memory = max(memory, peak_rss_kib(stats[0].pid))
                part.peak_mib = max(part.peak_mib, memory / 1024)
                part.processes = max(part.processes, len(stats))

    def mark(self) -> None:
        """From now on CPU seconds count from here (memory peaks keep their history)."""
        self.sample()
        with self._lock:
            for part in self.usage.values():
                part.cpu_at_mark = part.cpu_now

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="proc-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, PartUsage]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.sample()
        return self.usage
