"""Where an end-to-end crawl's time goes: pages and CPU per half second, fetch times by depth, the largest hosts.

One crawl of ``bench.e2e_vs_scrapy``'s simulated web by Trawl (the demo's settings, plus
``--trawl-env``) and, with ``--scrapy``, one by two Scrapy processes splitting the hosts. For
each, from the simulated web's request log and a sampler of the machine's CPU (``/proc/stat``,
every half second, all processes: run it on an otherwise idle machine):

* pages fetched and the machine's busy share per half second, and the time the machine stayed
  at least 90% busy until (``saturated_until``): after it, the crawl's tail;
* when the pages of each depth (breadth-first from the home pages, as ``SimWeb.reachable``
  walks them) were fetched;
* for the hosts with most pages: their first and last fetch, the median gap between one
  response's end and the next request's start, and the time they had no request in gaps longer
  than ``IDLE_GAP``.

    .venv/bin/python -m bench.e2e_timeline [--scrapy] [--trawl-env NAME=VALUE ...] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.e2e_vs_scrapy import Workload, add_web_options, build_workload, run_scrapy, run_trawl
from libs.simweb.request_log import RequestRecord, read_log_file
from libs.simweb.web import SimWeb

STEP = 0.5  # seconds per timeline step
SATURATED = 0.9  # the machine's busy share that counts as saturated
SHARES = (0.5, 0.9, 0.99)  # shares of the pages whose time to fetch is reported
IDLE_GAP = 0.4  # a host's gap longer than this counts as time without work for it (twice the min delay)


class CpuSampler:
    """The machine's busy share (every CPU, every process) per ``STEP``, stamped with ``time.monotonic()``."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    def _run(self) -> None:
        last = self._read()
        while not self._stop.wait(STEP):
            now = self._read()
            total, idle = now[0] - last[0], now[1] - last[1]
            self.samples.append((time.monotonic() - STEP / 2, 1 - idle / total if total else 0.0))
            last = now

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def depths(web: SimWeb) -> dict[str, int]:
    """Each reachable, allowed page's depth from the home pages, walked as ``SimWeb.reachable`` walks."""
    reachable = web.reachable(web.home_pages())
    depth = {url: 0 for url in web.home_pages() if url in reachable}
    queue = deque(sorted(depth))
    while queue:
        url = queue.popleft()
        if web.pages[url].nofollow:
            continue
        for link in web.links_at(url):
            if link.kind != "bad" and link.target_url in reachable and link.target_url not in depth:
                depth[link.target_url] = depth[url] + 1
                queue.append(link.target_url)
    return depth


def _pages(log: Sequence[RequestRecord]) -> list[RequestRecord]:
    return [r for r in log if r.is_page]


@dataclass(frozen=True)
class DepthSpan:
    depth: int
    pages: int
    first: float
    median: float
    p90: float
    last: float


@dataclass(frozen=True)
class HostSpan:
    host: str
    pages: int
    first: float
    last: float
    median_gap: float
    idle: float


def depth_spans(log: Sequence[RequestRecord], depth: dict[str, int]) -> list[DepthSpan]:
    """When the pages of each depth were fetched (ends, seconds from the crawl's first request)."""
    start = min(r.started_at for r in log)
    ends: dict[int, list[float]] = defaultdict(list)
    for r in _pages(log):
        ends[depth.get(r.url, -1)].append(r.finished_at - start)
    spans = []
    for d, times in sorted(ends.items()):
        times.sort()
        spans.append(DepthSpan(d, len(times), round(times[0], 2), round(times[len(times) // 2], 2),
                               round(times[int(len(times) * 0.9)], 2), round(times[-1], 2)))
    return spans


def host_spans(log: Sequence[RequestRecord], top: int) -> list[HostSpan]:
    """The ``top`` hosts with most pages: their span, median gap and time in gaps over ``IDLE_GAP``."""
    start = min(r.started_at for r in log)
    per_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for r in _pages(log):
        per_host[r.host].append(r)
    spans = []
    for host, rows in sorted(per_host.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]:
        rows.sort(key=lambda r: r.started_at)
        gaps = [b.started_at - a.finished_at for a, b in itertools.pairwise(rows)]
        spans.append(HostSpan(host, len(rows), round(rows[0].started_at - start, 2),
                              round(rows[-1].finished_at - start, 2),
                              round(statistics.median(gaps), 3) if gaps else 0.0,
                              round(sum(g for g in gaps if g > IDLE_GAP), 2)))
    return spans


def timeline(log: Sequence[RequestRecord], samples: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Pages and the machine's busy share per ``STEP`` from the crawl's first request to its last page."""
    pages = _pages(log)
    start = min(r.started_at for r in log)
    end = max(r.finished_at for r in pages)
    steps = int((end - start) / STEP) + 1
    fetched = Counter(int((r.finished_at - start) / STEP) for r in pages)
    busy: dict[int, float] = {}
    for at, share in samples:
        if start <= at <= end + STEP:
            busy[int((at - start) / STEP)] = share
    shares = [busy.get(i) for i in range(steps)]
    known = [s for s in shares if s is not None]
    saturated_until = 0.0
    for i, step_share in enumerate(shares):
        if step_share is not None and step_share >= SATURATED:
            saturated_until = (i + 1) * STEP
    finished = sorted(r.finished_at - start for r in pages)
    return {
        "seconds": round(end - start, 2),
        "pages": len(pages),
        # when half, 90% and 99% of the pages had been fetched: the rate before the crawl's last pages
        "seconds_to": {f"{share:.0%}": round(finished[math.ceil(share * len(finished)) - 1], 2)
                       for share in SHARES},
        "pages_per_second": [fetched.get(i, 0) / STEP for i in range(steps)],
        "busy": [None if s is None else round(s, 2) for s in shares],
        "mean_busy": round(statistics.fmean(known), 3) if known else None,
        "saturated_until": round(min(saturated_until, end - start), 2),
    }


def crawl_report(name: str, log: Sequence[RequestRecord], samples: Sequence[tuple[float, float]],
                 depth: dict[str, int], top: int) -> dict[str, Any]:
    return {"name": name, **timeline(log, samples), "depths": [asdict(d) for d in depth_spans(log, depth)],
            "hosts": [asdict(h) for h in host_spans(log, top)]}


def run(work: Workload, overrides: dict[str, str], scrapy: bool, top: int) -> list[dict[str, Any]]:
    depth = depths(work.web)
    reports = []
    with tempfile.TemporaryDirectory(prefix="trawl-bench-timeline-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        with CpuSampler() as sampler:
            _figures, crawl = run_trawl(work, folder, overrides)
        reports.append(crawl_report("trawl", crawl.log, sampler.samples, depth, top))
        if scrapy:
            with CpuSampler() as sampler:
                run_scrapy(work, folder, 2)
            reports.append(crawl_report("scrapy_2", read_log_file(folder / "scrapy-2.log"), sampler.samples, depth,
                                        top))
    return reports


def print_report(report: dict[str, Any]) -> None:
    tail = report["seconds"] - report["saturated_until"]
    rate = report["pages"] / report["seconds"]
    print(f"{report['name']}: {report['pages']} pages in {report['seconds']} s ({rate:.1f} pages/s);"
          f" machine busy {report['mean_busy']} on average, at least {SATURATED:.0%} until"
          f" {report['saturated_until']} s, then a tail of {tail:.2f} s")
    print("  pages fetched by: " + ", ".join(f"{share} at {t} s ({report['pages'] * float(share[:-1]) / 100 / t:.1f}"
                                             " pages/s)" for share, t in report["seconds_to"].items()))
    print("  seconds  pages/s  busy")
    for i, (rate, busy) in enumerate(zip(report["pages_per_second"], report["busy"], strict=True)):
        print(f"  {i * STEP:7.1f}  {rate:7.0f}  {'-' if busy is None else f'{busy:.2f}'}")
    print("  depth  pages  first  median    p90   last  (s)")
    for d in report["depths"]:
        print(f"  {d['depth']:5d}  {d['pages']:5d}  {d['first']:5.2f}  {d['median']:6.2f}  {d['p90']:5.2f}"
              f"  {d['last']:5.2f}")
    print(f"  host (most pages)            pages  first   last  median gap  idle in gaps > {IDLE_GAP} s")
    for h in report["hosts"]:
        print(f"  {h['host']:28s} {h['pages']:5d}  {h['first']:5.2f}  {h['last']:5.2f}  {h['median_gap']:10.3f}"
              f"  {h['idle']:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser)
    parser.add_argument("--top-hosts", type=int, default=6)
    parser.add_argument("--scrapy", action="store_true", help="Also crawl with two Scrapy processes.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = build_workload(args.seed, args.hosts, args.pages)
    print(f"web: {len(work.hosts)} hosts, {len(work.reachable)} reachable allowed pages", file=sys.stderr)
    reports = run(work, dict(item.split("=", 1) for item in args.trawl_env), args.scrapy, args.top_hosts)
    if args.json:
        print(json.dumps(reports, indent=2))
        return
    for report in reports:
        print_report(report)


if __name__ == "__main__":
    main()
