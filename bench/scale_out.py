"""Scale-out: the CPU-bound end-to-end crawl with 1 and 2 replicas, measured; its curve on N cores, projected.

Kafka partitions are the unit of parallelism: the fetcher, extractor and dedup scale by replicas
in their consumer groups, the scheduler, importance and linkbase by the partitions of their
topics (each replica owns some), while PostgreSQL and the one broker are shared by all.

**Measured.** The web and settings of ``bench.e2e_vs_scrapy``'s Trawl contender (its simulated
web, the demo's settings, no WARC archive) crawled by the whole local stack to an idle frontier,
once per replica count (``--replicas 1,2``; rotated when repeated), with that many processes of
each service in ``--replicate`` (default: fetcher, extractor, dedup; ``bench.trawl_stack_run``).
Pages per second is judged from the web server's log as in ``bench.e2e_vs_scrapy``; CPU per page
from /proc, per part (all processes of a service together), PostgreSQL split into its backends
(one per connection) and its background processes (WAL writer, checkpointer ...), and the
busiest single process (or, for the broker, thread) of each part.

**Projected** (:func:`project`), for N cores, from each part's CPU ms per page:

* each part's CPU is its idle CPU (read for ``--idle-seconds`` before the seeds go in: consumers'
  empty fetches, timers), per replica and per second, plus CPU per page (the crawl's CPU less the
  idle CPU over the crawl's time, median of the runs; a busy consumer's fetches return data, so
  idle CPU is if anything less while crawling: the projection errs low);
* a part that scales by replicas or partitions runs as many replicas as its CPU needs (each at
  most one core, an extractor replica at most its worker processes), at most as many as its
  topic has partitions; each replica owns whole partitions (the busiest ``ceil(12 / replicas)``
  of them: keys are taken to spread evenly, a skew of hosts is not modelled) and costs its idle CPU;
* a shared part uses at most ``max_cores`` cores, its idle CPU growing with the service replicas
  (fitted from the runs): PostgreSQL's backends spread over cores
  (one per connection, each replica brings its own), its background processes are each one
  process (the busiest of them caps the rate at one core); the broker spreads over its worker
  threads (``--broker-cores`` limits it). The curve is printed a second time with the broker on
  one core: the local broker's storage engine (Tansu's object store, in memory) keeps every
  idempotent producer's sequence numbers in one cluster-wide object, rewritten (serialised whole,
  under optimistic concurrency) on every produce and read back by fetches, so its work does not
  split by partition as a Kafka cluster's does; the truth lies between the two curves;
* pages/s at N cores is the largest rate at which every part's needs fit and the parts together
  need at most N cores: (N x 1000 - idle CPU) / (sum of ms per page), unless a capped part's cap
  comes first. The web's server, this benchmark's own process and lock waits are not modelled;
  the simulated web's own ceiling (its largest host, one request per ``min_delay``) is printed
  apart: it is the web's, not the crawler's.

    .venv/bin/python -m bench.scale_out [--hosts 400 --pages 4000 --seed 7] [--replicas 1,2]
        [--replicate fetcher,extractor,dedup] [--repeat 1] [--idle-seconds 10] [--broker-cores N] [--json]
        [--from-json FILE]  (project again from a saved --json result, no crawl)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.e2e_vs_scrapy import MIN_DELAY, Workload, add_web_options, build_workload, log_figures
from bench.harness import machine
from bench.proc_usage import children_of, read_stat
from bench.simweb_process import served_web
from bench.trawl_stack_run import crawl_with_stack
from cli.demo import DEMO_ENV
from libs.common.topics import INPUTS
from libs.localinfra import procs

CORES = (2, 4, 8, 16)
TARGET_8_OVER_2 = 3.5
REPLICATED = ("fetcher", "extractor", "dedup")
PARTITIONED = ("scheduler", "importance", "linkbase")
PARTITIONS = {service: INPUTS[service][0].partitions for service in (*REPLICATED, *PARTITIONED)}
"""Most replicas of a service that own partitions: those of the topic it consumes (its inputs are
co-partitioned, the same count)."""
EXTRACTOR_PROCESSES = int(DEMO_ENV.get("TRAWL_EXTRACTOR_PROCESSES", "1"))
CORES_BOUND = "cores"


# -- the model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One part of the crawler as the projection sees it: CPU per page crawled, and CPU per second that it
    spends whatever the rate (consumers' empty fetches, timers)."""

    name: str
    cpu_ms_per_page: float  # all its processes together
    scaling: str  # "replicas", "partitions" or "shared"
    max_replicas: int = 1  # its topic's partitions: at most this many replicas, each owning whole partitions
    cores_per_replica: float = 1.0  # the most cores one replica can use
    idle_ms_per_second: float = 0.0  # per replica (shared: the part's own)
    idle_per_replica: float = 0.0  # shared: ms per second more for each service replica beyond the first
    max_cores: float | None = None  # shared: the most cores it can use (None: any number)

    def replicas_for(self, rate: float) -> int | None:
        """Fewest replicas that carry ``rate`` pages/s (None: more than it can have). The busiest replica
        owns ``ceil(partitions / replicas)`` partitions and as large a share of the pages (keys are taken
        to spread evenly over partitions)."""
        if self.scaling == "shared":
            return 1
        for replicas in range(1, self.max_replicas + 1):
            share = math.ceil(self.max_replicas / replicas) / self.max_replicas
            if self.idle_ms_per_second + share * rate * self.cpu_ms_per_page <= 1000 * self.cores_per_replica:
                return replicas
        return None

    def load(self, rate: float, replicas: int, extra_replicas: int) -> float:
        """CPU ms per second at ``rate`` with ``replicas`` of its own and ``extra_replicas`` in the stack."""
        if self.scaling == "shared":
            return self.idle_ms_per_second + self.idle_per_replica * extra_replicas + rate * self.cpu_ms_per_page
        return replicas * self.idle_ms_per_second + rate * self.cpu_ms_per_page


@dataclass(frozen=True)
class Point:
    cores: float
    pages_per_second: float
    bottleneck: str  # CORES_BOUND, or the part (or ceiling) that stops a higher rate
    replicas: dict[str, int]
    cpu_ms_per_page: float  # all parts together at that rate, their idle CPU included


def _fit(parts: Sequence[Part], cores: float, rate: float,
         ceilings: Mapping[str, float] | None) -> tuple[str | None, dict[str, int], float]:
    """(what ``rate`` does not fit, or None; each scaled part's replicas; CPU ms per second in all)."""
    for name, ceiling in (ceilings or {}).items():
        if rate > ceiling:
            return name, {}, 0.0
    replicas: dict[str, int] = {}
    for part in parts:
        if part.scaling != "shared":
            needed = part.replicas_for(rate)
            if needed is None:
                return part.name, replicas, 0.0
            replicas[part.name] = needed
    extra = sum(r - 1 for r in replicas.values())
    total = 0.0
    for part in parts:
        load = part.load(rate, replicas.get(part.name, 1), extra)
        if part.scaling == "shared" and part.max_cores is not None and load > 1000 * part.max_cores:
            return part.name, replicas, 0.0
        total += load
    return (CORES_BOUND if total > 1000 * cores else None), replicas, total


def check(parts: Sequence[Part], cores: float, rate: float, ceilings: Mapping[str, float] | None = None) -> str | None:
    """None when ``rate`` pages/s fits on ``cores`` cores; else what it does not fit: a ceiling, a part
    at its most replicas or cores, or CORES_BOUND (the parts together need more cores)."""
    return _fit(parts, cores, rate, ceilings)[0]


def project(parts: Sequence[Part], cores: float, ceilings: Mapping[str, float] | None = None) -> Point:
    """The highest rate that fits on ``cores`` cores (to 0.01%), and what stops a higher one."""
    per_page = sum(p.cpu_ms_per_page for p in parts)
    high = min([1000 * cores / per_page if per_page > 0 else 1e12, *(ceilings or {}).values()])
    low = 0.0
    if check(parts, cores, high, ceilings) is None:
        low = high
    else:
        for _ in range(100):
            middle = (low + high) / 2
            if check(parts, cores, middle, ceilings) is None:
                low = middle
            else:
                high = middle
    bottleneck = check(parts, cores, low * 1.0001 + 1e-9, ceilings) or CORES_BOUND
    _, replicas, total = _fit(parts, cores, low, ceilings)
    return Point(cores, low, bottleneck, replicas, total / low if low > 0 else 0.0)


def curve(parts: Sequence[Part], cores: Sequence[float] = CORES,
          ceilings: Mapping[str, float] | None = None) -> list[Point]:
    return [project(parts, n, ceilings) for n in cores]


def stops_scaling(parts: Sequence[Part], ceilings: Mapping[str, float] | None = None,
                  most: int = 1024) -> Point | None:
    """The fewest whole cores at which something other than cores limits the rate (None: none up to
    ``most``): from there on, more cores add nothing."""
    if project(parts, most, ceilings).bottleneck == CORES_BOUND:
        return None
    low, high = 0, most  # cores-bound at low (or 0), not at high
    while high - low > 1:
        middle = (low + high) // 2
        if project(parts, middle, ceilings).bottleneck == CORES_BOUND:
            low = middle
        else:
            high = middle
    return project(parts, high, ceilings)


# -- measuring -------------------------------------------------------------------------------------


def _thread_cpu(pid: int) -> dict[int, float]:
    out: dict[int, float] = {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return out
    for tid in tids:
        stat = read_stat(pid, tid)
        if stat is not None:
            out[tid] = stat.cpu_seconds
    return out


@dataclass
class ProcessProbe:
    """CPU of each process of each part (and each thread of the broker) at the mark and when idle."""

    at: dict[str, dict[str, dict[int, tuple[str, float]]]] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)  # moment -> time.monotonic()

    def __call__(self, moment: str, parts: dict[str, tuple[int, bool]]) -> None:
        self.times[moment] = time.monotonic()
        snapshot: dict[str, dict[int, tuple[str, float]]] = {}
        for name, (root, children) in parts.items():
            units: dict[int, tuple[str, float]] = {}
            if name == "broker":
                units = {tid: ("thread", cpu) for tid, cpu in _thread_cpu(root).items()}
            else:
                for pid in [root, *(children_of(root) if children else [])]:
                    stat = read_stat(pid)
                    if stat is not None:
                        units[pid] = (" ".join(procs.cmdline(pid)), stat.cpu_seconds)
            snapshot[name] = units
        self.at[moment] = snapshot

    def deltas(self, part: str) -> list[tuple[str, float]]:
        """(command, CPU seconds) of each process (thread) of ``part`` alive at both moments, busiest first."""
        before, after = self.at.get("mark", {}).get(part, {}), self.at.get("idle", {}).get(part, {})
        found = [(cmd, cpu - before[pid][1]) for pid, (cmd, cpu) in after.items() if pid in before]
        return sorted(found, key=lambda item: -item[1])


def _postgres_background(command: str) -> bool:
    """A PostgreSQL process that serves no connection (WAL writer, checkpointer, autovacuum ...)."""
    return "(" not in command and "[local]" not in command and command.startswith("postgres:")


@dataclass
class Run:
    replicas: int
    pages: int
    seconds: float
    rate: float
    load: float
    cpu_ms_per_page: dict[str, float]  # service (replicas together), postgres, broker, simweb: the whole crawl
    busiest_ms_per_page: dict[str, float]  # the busiest single process (broker: thread) of each part
    postgres_background_ms_per_page: float
    postgres_busiest_background: tuple[str, float]
    broker_threads_busy: int  # threads with more than 5% of the broker's CPU
    max_in_flight_per_host: int
    min_gap: float
    processes: dict[str, int] = field(default_factory=dict)  # service -> its processes (replicas) in this run
    window_seconds: float = 0.0  # the CPU counters' window: seeding to idle, and the settle period
    idle_ms_per_second: dict[str, float] = field(default_factory=dict)  # part -> CPU with nothing to crawl
    work_ms_per_page: dict[str, float] = field(default_factory=dict)  # part -> CPU per page less the idle CPU


def _service_of(part: str) -> str:
    return part.split(".", 1)[0]


def _by_part(values: Mapping[str, float]) -> dict[str, float]:
    """Figures of processes (``fetcher``, ``fetcher.2`` ...) summed by part."""
    out: dict[str, float] = {}
    for name, value in values.items():
        out[_service_of(name)] = out.get(_service_of(name), 0.0) + value
    return out


def measure(work: Workload, folder: Path, replicas: int, replicate: Sequence[str], idle_seconds: float) -> Run:
    web = served_web(work.spec, folder / f"scale-{replicas}.log")
    web.start()
    probe = ProcessProbe()
    try:
        crawl = crawl_with_stack(web, work.web.home_pages(), replicas={s: replicas for s in replicate},
                                 probe=probe, idle_seconds=idle_seconds)
    finally:
        web.stop()
    figures = log_figures(crawl.log, work.web)
    pages = max(figures.pages, 1)
    window = probe.times.get("idle", 0.0) - probe.times.get("mark", 0.0)
    cpu = _by_part({name: usage.cpu_seconds for name, usage in crawl.usage.items()})
    idle = {k: v * 1000 / crawl.idle_seconds for k, v in _by_part(crawl.idle_cpu).items()} if crawl.idle_seconds else {}
    busiest: dict[str, float] = {}
    for name in crawl.usage:
        for _, seconds in probe.deltas(name)[:1]:
            busiest[_service_of(name)] = max(busiest.get(_service_of(name), 0.0), seconds * 1000 / pages)
    background = [(cmd.removeprefix("postgres: ").strip(), seconds * 1000 / pages)
                  for cmd, seconds in probe.deltas("postgres") if _postgres_background(cmd)]
    threads = probe.deltas("broker")
    broker_total = sum(seconds for _, seconds in threads)
    return Run(
        replicas=replicas, pages=figures.pages, seconds=round(figures.seconds, 2), rate=round(figures.rate, 1),
        load=round(os.getloadavg()[0], 1),
        cpu_ms_per_page={k: round(v * 1000 / pages, 3) for k, v in cpu.items()},
        busiest_ms_per_page={k: round(v, 3) for k, v in busiest.items()},
        postgres_background_ms_per_page=round(sum(v for _, v in background), 3),
        postgres_busiest_background=(background[0][0], round(background[0][1], 3)) if background else ("", 0.0),
        broker_threads_busy=sum(1 for _, seconds in threads if broker_total > 0 and seconds > 0.05 * broker_total),
        max_in_flight_per_host=figures.max_in_flight_per_host, min_gap=round(figures.min_gap, 3),
        processes={s: (replicas if s in replicate else 1) for s in (*PARTITIONED, *REPLICATED)},
        window_seconds=round(window, 2),
        idle_ms_per_second={k: round(v, 2) for k, v in idle.items()},
        work_ms_per_page={k: round(max(0.0, (v - idle.get(k, 0.0) / 1000 * window) * 1000 / pages), 3)
                          for k, v in cpu.items()},
    )


# -- from measurements to the model ----------------------------------------------------------------


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def _idle_fit(runs: Sequence[Run], part: str) -> tuple[float, float]:
    """A shared part's idle CPU (ms per second) with one process of each service, and what each more service
    process adds (from the runs with the fewest and the most processes; never below 0)."""
    def extra(run: Run) -> int:
        return sum(run.processes.values()) - len(run.processes)

    counts = sorted({extra(r) for r in runs})
    fewest = _median([r.idle_ms_per_second.get(part, 0.0) for r in runs if extra(r) == counts[0]])
    if len(counts) < 2:
        return fewest, 0.0
    most = _median([r.idle_ms_per_second.get(part, 0.0) for r in runs if extra(r) == counts[-1]])
    slope = max(0.0, (most - fewest) / (counts[-1] - counts[0]))
    return max(0.0, fewest - slope * counts[0]), slope


def model_parts(runs: Sequence[Run], broker_cores: float | None) -> list[Part]:
    """The projection's parts from the measured runs: each part's CPU per page less its idle CPU (median of
    the runs); a scaled service's idle CPU per replica; a shared part's idle CPU and what each more service
    replica adds to it (:func:`_idle_fit`)."""
    def work(part: str) -> float:
        return _median([r.work_ms_per_page.get(part, r.cpu_ms_per_page.get(part, 0.0)) for r in runs])

    parts = []
    for service in (*PARTITIONED, *REPLICATED):
        if not any(service in r.cpu_ms_per_page for r in runs):
            continue
        idle = _median([r.idle_ms_per_second.get(service, 0.0) / r.processes.get(service, 1) for r in runs])
        parts.append(Part(service, round(work(service), 3), "replicas" if service in REPLICATED else "partitions",
                          max_replicas=PARTITIONS[service],
                          cores_per_replica=float(EXTRACTOR_PROCESSES) if service == "extractor" else 1.0,
                          idle_ms_per_second=round(idle, 2)))
    background = _median([r.postgres_background_ms_per_page for r in runs])
    busiest_background = _median([r.postgres_busiest_background[1] for r in runs])
    idle, per_replica = _idle_fit(runs, "postgres")
    parts.append(Part("postgres backends", round(max(0.0, work("postgres") - background), 3), "shared",
                      idle_ms_per_second=round(idle, 2), idle_per_replica=round(per_replica, 2)))
    parts.append(Part("postgres background", round(background, 3), "shared",
                      max_cores=background / busiest_background if busiest_background > 0 else None))
    idle, per_replica = _idle_fit(runs, "broker")
    parts.append(Part("broker", round(work("broker"), 3), "shared", idle_ms_per_second=round(idle, 2),
                      idle_per_replica=round(per_replica, 2), max_cores=broker_cores))
    return parts


def web_ceiling(work: Workload) -> float:
    """The simulated web's own ceiling on a crawl's rate: its pages over the time its largest host takes
    at one request per ``MIN_DELAY`` (the crawl cannot end sooner)."""
    largest = max(Counter(urlsplit(u).hostname for u in work.reachable).values())
    return len(work.reachable) / (largest * MIN_DELAY)


def projection(parts: Sequence[Part], cores: Sequence[float] = CORES) -> dict[str, Any]:
    points = curve(parts, cores)
    by_cores = {p.cores: p for p in points}
    two = project(parts, 2)
    eight = by_cores.get(8) or project(parts, 8)
    stop = stops_scaling(parts)
    ratio = eight.pages_per_second / two.pages_per_second if two.pages_per_second else 0.0
    return {
        "parts": [asdict(p) for p in parts],
        "curve": [asdict(p) for p in points],
        "ratio_8_over_2": round(ratio, 2), "target": TARGET_8_OVER_2, "met": ratio >= TARGET_8_OVER_2,
        "stops_scaling": asdict(stop) if stop else None,
        "saturated": asdict(project(parts, 1e6)),
    }


def with_max_cores(parts: Sequence[Part], names: set[str], cores: float) -> list[Part]:
    """``parts`` with the shared parts ``names`` limited to ``cores`` cores."""
    return [Part(**{**asdict(p), "max_cores": cores}) if p.name in names else p for p in parts]


def sensitivity(parts: Sequence[Part]) -> dict[str, float]:
    """The 8-core / 2-core ratio under harsher assumptions about the shared parts."""
    def ratio(ps: Sequence[Part]) -> float:
        return round(project(ps, 8).pages_per_second / project(ps, 2).pages_per_second, 2)

    return {"broker on one core": ratio(with_max_cores(parts, {"broker"}, 1.0)),
            "PostgreSQL backends on one core": ratio(with_max_cores(parts, {"postgres backends"}, 1.0)),
            "both on one core each": ratio(with_max_cores(parts, {"broker", "postgres backends"}, 1.0))}


# -- the report ------------------------------------------------------------------------------------


def print_report(result: dict[str, Any]) -> None:
    w, runs = result["workload"], [Run(**r) for r in result["runs"]]
    print(f"scale_out: simulated web of {w['hosts']} hosts, {w['pages_reachable']} reachable pages (seed {w['seed']}),"
          f" the demo's settings; replicas of {', '.join(w['replicate'])}")
    if runs:
        print("\nMeasured (pages/s from the web's log; CPU ms per page from /proc, a service's replicas together):")
        print("| replicas | pages | seconds | pages/s | load | " + " | ".join(_PART_COLUMNS)
              + " | total | web's server |")
        print("| ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in _PART_COLUMNS) + " | ---: | ---: |")
        for r in runs:
            cells = [f"{r.cpu_ms_per_page.get(p, 0.0):.2f}" for p in _PART_COLUMNS]
            total = sum(v for k, v in r.cpu_ms_per_page.items() if k != "simweb")
            print(f"| {r.replicas} | {r.pages} | {r.seconds:.1f} | {r.rate:.1f} | {r.load} | " + " | ".join(cells)
                  + f" | {total:.2f} | {r.cpu_ms_per_page.get('simweb', 0.0):.2f} |")
        for r in runs:
            busiest = ", ".join(f"{k} {v:.2f}" for k, v in r.busiest_ms_per_page.items() if k != "simweb")
            name, ms = r.postgres_busiest_background
            print(f"  {r.replicas} replica(s): busiest single process (broker: thread), ms per page: {busiest};"
                  f" PostgreSQL background {r.postgres_background_ms_per_page:.2f} (busiest: {name} {ms:.2f});"
                  f" broker threads busy {r.broker_threads_busy}; politeness: max {r.max_in_flight_per_host}"
                  f" per host, smallest gap {r.min_gap} s")
        if any(r.idle_ms_per_second for r in runs):
            print("\nIdle CPU (ms per second, the stack up with nothing to crawl) and CPU per page less it:")
            print("| replicas | window s | " + " | ".join(f"{c} idle / per page" for c in _PART_COLUMNS) + " |")
            print("| ---: | ---: | " + " | ".join("---:" for _ in _PART_COLUMNS) + " |")
            for r in runs:
                cells = [f"{r.idle_ms_per_second.get(c, 0.0):.0f} / {r.work_ms_per_page.get(c, 0.0):.2f}"
                         for c in _PART_COLUMNS]
                print(f"| {r.replicas} | {r.window_seconds:.0f} | " + " | ".join(cells) + " |")
    p = result["projection"]
    print("\nModel (CPU ms per page; idle CPU ms per second, per replica; the most replicas or cores):")
    for part in p["parts"]:
        if part["scaling"] == "shared":
            limit = "any number of cores" if part["max_cores"] is None else f"at most {part['max_cores']:.2f} cores"
            idle = f"idle {part['idle_ms_per_second']:.0f} + {part['idle_per_replica']:.1f} per service replica"
        else:
            limit = (f"up to {part['max_replicas']} replicas ({part['scaling']}),"
                     f" {part['cores_per_replica']:g} core(s) each")
            idle = f"idle {part['idle_ms_per_second']:.0f} per replica"
        print(f"  {part['name']:<20} {part['cpu_ms_per_page']:6.2f} ms per page; {idle}; {limit}")
    serial = result["projection_broker_serial"]
    print("\nProjected (as modelled; and with the broker on one core):")
    print("| cores | pages/s | x 2 cores | CPU ms per page | limited by | replicas | pages/s, broker on one core"
          " | x 2 cores | limited by |")
    print("| ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |")
    two = next((c["pages_per_second"] for c in p["curve"] if c["cores"] == 2), 0.0)
    two_serial = next((c["pages_per_second"] for c in serial["curve"] if c["cores"] == 2), 0.0)
    for c, b in zip(p["curve"], serial["curve"], strict=True):
        reps = ", ".join(f"{k} {v}" for k, v in c["replicas"].items())
        print(f"| {c['cores']:g} | {c['pages_per_second']:.0f} | {c['pages_per_second'] / two:.2f} |"
              f" {c['cpu_ms_per_page']:.2f} | {c['bottleneck']} | {reps} | {b['pages_per_second']:.0f} |"
              f" {b['pages_per_second'] / two_serial:.2f} | {b['bottleneck']} |")
    for label, proj in (("as modelled", p), ("broker on one core", serial)):
        stop, sat = proj["stops_scaling"], proj["saturated"]
        where = (f"scales with cores up to {stop['cores']:g} cores ({stop['pages_per_second']:.0f} pages/s), where"
                 f" {stop['bottleneck']} saturates (no number of cores passes {sat['pages_per_second']:.0f} pages/s)"
                 if stop else "scales with cores throughout (to 1,024 cores)")
        print(f"  {label}: {where}; 8 cores / 2 cores {proj['ratio_8_over_2']:.2f}x (target {proj['target']}x:"
              f" {'met' if proj['met'] else 'NOT met'})")
    print("  harsher assumptions, 8 / 2 cores: " + "; ".join(f"{k} {v:.2f}x" for k, v in result["sensitivity"].items()))
    print(f"  this web's own ceiling (largest host, one request per {MIN_DELAY} s): {w['web_ceiling']:.0f} pages/s;"
          " a rate above it needs a web with more hosts, not more cores")
    m = result["machine"]
    print(f"  machine: {m['cpus']} cpus, Python {m['python']}, load {m['load_average_1m_at_end']}")


_PART_COLUMNS = ("scheduler", "linkbase", "fetcher", "extractor", "dedup", "importance", "postgres", "broker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser)
    parser.add_argument("--replicas", default="1,2", help="Replica counts to measure, comma-separated.")
    parser.add_argument("--replicate", default=",".join(REPLICATED),
                        help="Services run with that many replicas (the others with one).")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="How long to read the stack's idle CPU before each crawl (0: not read).")
    parser.add_argument("--broker-cores", type=float, default=None,
                        help="The most cores the broker can use (default: any number).")
    parser.add_argument("--from-json", type=Path, help="Project again from a saved --json result (no crawl).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        runs = [Run(**{**r, "postgres_busiest_background": tuple(r["postgres_busiest_background"])})
                for r in saved["runs"]]
        workload = saved["workload"]
    else:
        if args.trawl_env:
            parser.error("--trawl-env is not used here: the crawl runs with the demo's settings")
        counts = [int(n) for n in args.replicas.split(",") if n]
        replicate = [s for s in args.replicate.split(",") if s]
        work = build_workload(args.seed, args.hosts, args.pages)
        print(f"web: {len(work.hosts)} hosts, {len(work.reachable)} reachable allowed pages", file=sys.stderr)
        runs = []
        with tempfile.TemporaryDirectory(prefix="trawl-bench-scale-", dir="/var/tmp") as tmp:
            for i in range(args.repeat):
                for n in counts[i % len(counts):] + counts[: i % len(counts)]:
                    run = measure(work, Path(tmp), n, replicate, args.idle_seconds)
                    runs.append(run)
                    print(f"  repetition {i + 1}/{args.repeat}: {n} replica(s): {run.rate:,.1f} pages/s"
                          f" ({run.pages} pages, load {run.load})", file=sys.stderr, flush=True)
        workload = {"seed": args.seed, "hosts": args.hosts, "pages_configured": args.pages,
                    "pages_reachable": len(work.reachable), "replicate": replicate,
                    "web_ceiling": round(web_ceiling(work), 1)}
    parts = model_parts(runs, args.broker_cores)
    result = {"benchmark": "scale_out", "workload": workload, "runs": [asdict(r) for r in runs],
              "projection": projection(parts),
              "projection_broker_serial": projection(with_max_cores(parts, {"broker"}, 1.0)),
              "sensitivity": sensitivity(parts), "machine": machine()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
