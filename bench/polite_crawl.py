"""Politeness-bound crawling: Trawl and Scrapy side by side on webs of structured sites, against the bound.

The webs (``libs.simweb.site_tree.tree_family``) are made of sites as publishers lay them
out: home page, sections, articles; pages of 20-100 KB; some hosts with a robots.txt
``Crawl-delay``, some with ``Disallow: /``; articles linking to other sites:

* ``wide``: 320 sites of 10 to 100 pages, three levels;
* ``narrow``: one site of 2,000 pages and 500 one-page sites;
* ``deep``: 40 sites of 100 to 300 pages under five levels of sections;
* ``mixed``: 200 sites of 10 to 60 pages, half of them with a Crawl-delay of 0.5, 1 or 2 s.

Each web has a politeness delay (``WEB_DELAYS``), and both crawlers start from every site's
home page, one after the other on the same web served by its own process
(``libs.simweb.process``, uncompressed, pages rendered as asked):

* **Trawl**: the local stack (``bench.trawl_stack_run``) with the services' DEFAULT settings,
  but for ``TRAWL_FETCHER_MIN_DELAY`` = the web's delay and what reaching the web needs (its
  proxy, its ``*.test`` hosts let through the SSRF guard, a topic prefix);
* **Scrapy**: one process (``bench.polite_scrapy``) of ``bench.scrapy_spider``'s spider and settings
  (the extractor's trafilatura call, link following, robots.txt obeyed, one request at a time
  per host), ``DOWNLOAD_DELAY`` = the web's delay, ``CONCURRENT_REQUESTS`` = 100 (Scrapy's
  broad-crawl advice: "a good starting point is 100"). Scrapy does not read ``Crawl-delay`` from
  robots.txt, so for the same politeness it gets each such host's Crawl-delay as that host's
  delay (``DOWNLOAD_SLOTS``), as a Scrapy user who read those robots.txt files would set it;
  ``--scrapy-ignores-crawl-delay`` runs it as it comes, keeping only its own delay there (the
  log then counts its short gaps).

Both are judged from the server's request log alone: pages fetched (200, robots.txt aside),
crawl time (first request to last response) and the time until half and nine tenths of the pages were
answered (before the slowest host is the last one left), politeness (requests overlapping on a host, gaps
below the host's delay end-to-start and start-to-start, robots.txt; ``libs.simweb.log_checks``
and ``libs.simweb.politeness_bound``) and the PageRank its first 10/20/30/50% of pages capture
against the best order (``libs.simweb.crawl_order``), and how late each host's next request started
once its gap had passed with a URL of it known for a second (``libs.simweb.gap_lateness``). The
politeness bound is the least time any polite crawler could take (the slowest host: its robots.txt
and its pages one after the other, a gap of max(delay, Crawl-delay) before each, and their latencies); the CPU bound is
bare trafilatura (the extractor's call) over every reachable page on two idle cores (its CPU
time per page, measured on a sample of pages, times the pages, over two). Targets, printed
beside each row: Trawl's time at most 0.67 of Scrapy's and within 1.25 times the larger bound,
its PageRank@10% at least Scrapy's, no violations, its next start a median of at most 50 ms after the gap
(99th percentile under 200 ms).

    .venv/bin/python -m bench.polite_crawl [--scale 0.2] [--webs wide,narrow] [--crawlers trawl,scrapy]
        [--scrapy-ignores-crawl-delay] [--no-cpu-bound] [--trawl-env NAME=VALUE ...] [--log-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.e2e_vs_scrapy import run_bound
from bench.harness import REPO, machine
from bench.proc_usage import Sampler
from bench.trawl_stack_run import REACH_ENV, crawl_with_stack
from libs.simweb.crawl_order import fetch_order, pagerank_captured, reachable_pagerank
from libs.simweb.gap_lateness import ON_TIME, gap_lateness
from libs.simweb.log_checks import max_concurrency_per_host, robots_violations
from libs.simweb.politeness_bound import (
    HostBound,
    crawl_seconds,
    gap_violations,
    host_bounds,
    host_gaps,
    politeness_bound,
    seconds_to_share,
)
from libs.simweb.process import SimWebProcess
from libs.simweb.request_log import RequestRecord
from libs.simweb.site_tree import TreeWeb, TreeWebConfig, build_tree_web, tree_family

WEB_DELAYS = {"wide": 1.0, "narrow": 0.25, "deep": 0.5, "mixed": 0.25}
"""The politeness delay of each web (Trawl's ``TRAWL_FETCHER_MIN_DELAY``, Scrapy's ``DOWNLOAD_DELAY``)."""
SCRAPY_CONCURRENCY = 100
CRAWLERS = ("trawl", "scrapy")
TARGETS = {"time_vs_scrapy": 0.67, "time_vs_bound": 1.25, "late_p99": 0.2, "late_median": ON_TIME}
CPU_SAMPLE = 400
"""Pages the CPU bound extracts; the bound is the time per page times every reachable page."""
SHARES = (0.5, 0.9)
"""Shares of the pages whose time to answer is reported beside the crawl time."""


@dataclass
class Case:
    """One web and its ground truth."""

    name: str
    config: TreeWebConfig
    delay: float
    web: TreeWeb
    reachable: list[str]
    pagerank: dict[str, float]
    bounds: dict[str, HostBound]

    @property
    def bound(self) -> HostBound:
        return politeness_bound(self.bounds.values())


def build_case(name: str, config: TreeWebConfig, delay: float) -> Case:
    web = build_tree_web(config)
    reachable = sorted(web.reachable(web.home_pages()))
    return Case(name, config, delay, web, reachable, reachable_pagerank(web, reachable),
                host_bounds(web, reachable, delay, web.levels))


@dataclass
class CrawlFigures:
    """One crawl as the server logged it."""

    crawler: str
    pages: int
    requests: int
    seconds: float
    overlaps: int
    short_gaps_end_to_start: int
    short_gaps_start_to_start: int
    robots_violations: int
    max_in_flight_per_host: int
    pagerank_captured: dict[str, float]
    lateness: dict[str, float] | None = None
    """How late each host's next request started once its gap had passed (``libs.simweb.gap_lateness``)."""
    cpu_seconds: float | None = None
    seconds_to: dict[str, float] = field(default_factory=dict)
    """Seconds until half and nine tenths of the pages were answered (``libs.simweb.politeness_bound``)."""
    cpu_by_part: dict[str, float] = field(default_factory=dict)
    """Trawl's CPU seconds per service, PostgreSQL and the broker (empty for Scrapy: one process)."""
    notes: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return self.overlaps + self.short_gaps_end_to_start + self.robots_violations


def judge(case: Case, crawler: str, log: list[RequestRecord]) -> CrawlFigures:
    pages = [r for r in log if r.is_page]
    gaps = gap_violations(log, host_gaps(case.web, case.delay), default_gap=case.delay)
    captured = pagerank_captured(fetch_order(log), case.pagerank)
    late = gap_lateness(log, lambda url: [link.target_url for link in case.web.links_at(url)]
                        if url in case.web.pages else [], host_gaps(case.web, case.delay), case.delay)
    return CrawlFigures(
        crawler=crawler, pages=len(pages), requests=len(log), seconds=round(crawl_seconds(log), 2),
        overlaps=gaps.overlaps, short_gaps_end_to_start=gaps.end_to_start,
        short_gaps_start_to_start=gaps.start_to_start, robots_violations=len(robots_violations(log, case.web)),
        max_in_flight_per_host=max(max_concurrency_per_host(log).values(), default=0),
        pagerank_captured={f"{int(share * 100)}%": round(value, 3) for share, value in captured.items()},
        lateness=late.figures() if late is not None else None,
        seconds_to={f"{int(share * 100)}%": round(t, 2) for share, t in seconds_to_share(log, SHARES).items()},
    )


def served(case: Case, log_file: Path) -> SimWebProcess:
    return SimWebProcess(case.config, log_file, gzip=False, render=False)


def run_trawl(case: Case, folder: Path, overrides: Mapping[str, str]) -> CrawlFigures:
    web = served(case, folder / f"{case.name}-trawl.log")
    web.start()
    try:
        crawl = crawl_with_stack(web, case.web.home_pages(), tuning=REACH_ENV, watch_lag=False,
                                 overrides={"TRAWL_FETCHER_MIN_DELAY": str(case.delay), **overrides},
                                 timeout=max(900.0, 4 * case.bound.seconds + 300))
    finally:
        web.stop()
    figures = judge(case, "trawl", crawl.log)
    parts = {name: u.cpu_seconds for name, u in crawl.usage.items() if name != "simweb"}
    figures.cpu_seconds = round(sum(parts.values()), 1)
    figures.cpu_by_part = {name: round(seconds, 1) for name, seconds in sorted(parts.items(), key=lambda p: -p[1])}
    return figures


def scrapy_slots(case: Case) -> dict[str, dict[str, float]]:
    """Each host whose Crawl-delay exceeds the web's delay, with that Crawl-delay as its Scrapy delay."""
    return {host: {"delay": gap} for host, gap in host_gaps(case.web, case.delay).items() if gap > case.delay}


def run_scrapy(case: Case, folder: Path, crawl_delay: bool) -> CrawlFigures:
    web = served(case, folder / f"{case.name}-scrapy.log")
    proxy = web.start()
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "https_proxy", "all_proxy")}
    env.update({"http_proxy": proxy, "PYTHONUNBUFFERED": "1"})
    job = folder / f"{case.name}-scrapy.json"
    job.write_text(json.dumps({"hosts": sorted(case.web.hosts), "delay": case.delay,
                               "concurrency": SCRAPY_CONCURRENCY, "slots": scrapy_slots(case) if crawl_delay else {}}))
    spider = subprocess.Popen([sys.executable, "-m", "bench.polite_scrapy", str(job)], cwd=REPO, env=env)
    try:
        sampler = Sampler({"scrapy": (spider.pid, False)})
        sampler.start()
        sampler.mark()
        if spider.wait(timeout=max(900.0, 4 * case.bound.seconds + 300)) != 0:
            raise RuntimeError(f"the Scrapy process failed with {spider.returncode}")
        usage = sampler.stop()
        time.sleep(0.2)  # the server's last lines
        figures = judge(case, "scrapy", web.request_log)
    finally:
        if spider.poll() is None:
            spider.kill()
        web.stop()
    figures.cpu_seconds = round(usage["scrapy"].cpu_seconds, 1)
    if crawl_delay:
        figures.notes.append("Crawl-delays given as per-host delays (DOWNLOAD_SLOTS)")
    return figures


def cpu_bound_seconds(case: Case, sample: int = CPU_SAMPLE, cores: int = 2) -> float:
    """Bare trafilatura over every reachable page on ``cores`` otherwise idle cores: its CPU time per page,
    measured on a sample spread over the web (two processes at once, CPU time rather than wall time, so
    that other work on a shared machine does not inflate it), times the pages, over the cores."""
    step = max(1, len(case.reachable) // sample)
    urls = case.reachable[::step]
    html = [(url, text) for url in urls if (text := case.web.html(url)) is not None]
    _, pages_per_cpu_second = run_bound(SimpleNamespace(html=html))  # type: ignore[arg-type]  # reads .html alone
    return len(case.reachable) / pages_per_cpu_second / cores


def web_summary(case: Case, cpu_bound: float | None) -> dict[str, Any]:
    hosts = case.web.hosts.values()
    bound = case.bound
    sizes = [len(case.web.html(url) or "") for url in case.reachable[:: max(1, len(case.reachable) // 200)]]
    return {
        "web": case.name, "delay": case.delay, "hosts": len(case.web.hosts), "pages": len(case.web.pages),
        "reachable_pages": len(case.reachable), "max_level": max(case.web.levels.values()),
        "crawl_delay_hosts": sorted((h.crawl_delay or 0.0) for h in hosts if h.crawl_delay),
        "disallow_all_hosts": sum(1 for h in hosts if h.robots == "disallow_all"),
        "mean_page_kb": round(sum(sizes) / len(sizes) / 1000, 1),
        "politeness_bound": {"seconds": round(bound.seconds, 2), "host": bound.host, "pages": bound.pages,
                             "gap": bound.gap, "latency": bound.latency},
        "cpu_bound_seconds": round(cpu_bound, 2) if cpu_bound is not None else None,
    }


def verdicts(web: dict[str, Any], trawl: CrawlFigures | None, scrapy: CrawlFigures | None) -> dict[str, Any]:
    """Ratios and whether Trawl met each target (``None`` where a crawler did not run)."""
    out: dict[str, Any] = {}
    if trawl is None:
        return out
    floor = max(web["politeness_bound"]["seconds"], web["cpu_bound_seconds"] or 0.0)
    ratio_bound = trawl.seconds / floor if floor else 0.0
    out["trawl_vs_bound"] = {"ratio": round(ratio_bound, 2), "target": TARGETS["time_vs_bound"],
                             "met": ratio_bound <= TARGETS["time_vs_bound"]}
    out["trawl_violations"] = {"count": trawl.violations, "target": 0, "met": trawl.violations == 0}
    if trawl.lateness is not None:
        late = trawl.lateness
        on_time = late["median_s"] <= TARGETS["late_median"] and late["p99_s"] < TARGETS["late_p99"]
        out["trawl_lateness"] = {"median_s": late["median_s"], "p99_s": late["p99_s"], "met": on_time}
    if scrapy is not None and scrapy.seconds > 0:
        ratio = trawl.seconds / scrapy.seconds
        out["trawl_vs_scrapy"] = {"ratio": round(ratio, 2), "target": TARGETS["time_vs_scrapy"],
                                  "met": ratio <= TARGETS["time_vs_scrapy"]}
        mine, theirs = trawl.pagerank_captured["10%"], scrapy.pagerank_captured["10%"]
        out["pagerank_at_10"] = {"trawl": mine, "scrapy": theirs, "met": mine >= theirs}
    return out


def print_web(result: dict[str, Any]) -> None:
    w = result["web"]
    b = w["politeness_bound"]
    delays = sorted(set(w["crawl_delay_hosts"]))
    print(f"{w['web']}: {w['hosts']} hosts, {w['reachable_pages']} reachable allowed pages of {w['pages']},"
          f" {w['max_level'] + 1} levels; delay {w['delay']} s; Crawl-delay on {len(w['crawl_delay_hosts'])}"
          f" hosts {delays or ''}; Disallow: / on {w['disallow_all_hosts']}")
    cpu = f"{w['cpu_bound_seconds']:.1f} s" if w["cpu_bound_seconds"] is not None else "not measured"
    print(f"  politeness bound {b['seconds']:.1f} s ({b['host']}: {b['pages']} pages, gap {b['gap']} s, latency"
          f" {b['latency'] * 1000:.0f} ms); CPU bound {cpu} (bare trafilatura, 2 idle cores)")
    print(f"  {'':<8}{'pages':>7}{'time s':>9}{'50%/90% s':>13}{'/Scrapy':>9}{'/bound':>8}"
          "   PR@10%  PR@20%  PR@30%  PR@50%  overlap  gap<d end  gap<d start  robots  late p50/p99 ms  on time  CPU s")
    floor = max(b["seconds"], w["cpu_bound_seconds"] or 0.0)
    scrapy = result["crawls"].get("scrapy")
    for name, c in result["crawls"].items():
        vs_scrapy = f"{c['seconds'] / scrapy['seconds']:.2f}" if scrapy and scrapy["seconds"] else "-"
        pr = "".join(f"{v:>8.3f}" for v in c["pagerank_captured"].values())
        cpu_s = f"{c['cpu_seconds']:.0f}" if c["cpu_seconds"] is not None else "-"
        late = c["lateness"]
        late_s = f"{late['median_s'] * 1000:.0f} / {late['p99_s'] * 1000:.0f}" if late else "-"
        on_time = f"{late['on_time']:.3f}" if late else "-"
        to = c["seconds_to"]
        shares = f"{to['50%']:.1f}/{to['90%']:.1f}" if {"50%", "90%"} <= set(to) else "-"
        print(f"  {name:<8}{c['pages']:>7}{c['seconds']:>9.1f}{shares:>13}{vs_scrapy:>9}"
              f"{c['seconds'] / floor:>8.2f} {pr}"
              f"{c['overlaps']:>9}{c['short_gaps_end_to_start']:>11}{c['short_gaps_start_to_start']:>13}"
              f"{c['robots_violations']:>8}{late_s:>17}{on_time:>9}{cpu_s:>7}")
        if c.get("cpu_by_part"):
            print(f"  {'':<8}CPU s by part: " + ", ".join(f"{n} {s:.1f}" for n, s in c["cpu_by_part"].items()))
    v = result["verdicts"]
    marks = []
    if "trawl_vs_scrapy" in v:
        marks.append(f"time / Scrapy {v['trawl_vs_scrapy']['ratio']:.2f} <= {TARGETS['time_vs_scrapy']}:"
                     f" {_met(v['trawl_vs_scrapy'])}")
    if "trawl_vs_bound" in v:
        marks.append(f"time / max(bounds) {v['trawl_vs_bound']['ratio']:.2f} <= {TARGETS['time_vs_bound']}:"
                     f" {_met(v['trawl_vs_bound'])}")
    if "pagerank_at_10" in v:
        marks.append(f"PR@10% {v['pagerank_at_10']['trawl']:.3f} >= Scrapy's {v['pagerank_at_10']['scrapy']:.3f}:"
                     f" {_met(v['pagerank_at_10'])}")
    if "trawl_violations" in v:
        marks.append(f"violations {v['trawl_violations']['count']} = 0: {_met(v['trawl_violations'])}")
    if "trawl_lateness" in v:
        late = v["trawl_lateness"]
        marks.append(f"next start after the gap: median {late['median_s'] * 1000:.0f} ms <= {ON_TIME * 1000:.0f},"
                     f" p99 {late['p99_s'] * 1000:.0f} ms < {TARGETS['late_p99'] * 1000:.0f}: {_met(late)}")
    if marks:
        print("  Trawl targets: " + "; ".join(marks))


def _met(verdict: Mapping[str, Any]) -> str:
    return "met" if verdict["met"] else "NOT met"


def run_web(case: Case, crawlers: tuple[str, ...], overrides: Mapping[str, str], folder: Path,
            cpu: bool, trawl_first: bool, scrapy_crawl_delay: bool) -> dict[str, Any]:
    cpu_bound = cpu_bound_seconds(case) if cpu else None
    summary = web_summary(case, cpu_bound)
    crawls: dict[str, CrawlFigures] = {}
    order = [c for c in (CRAWLERS if trawl_first else CRAWLERS[::-1]) if c in crawlers]
    for crawler in order:
        began = time.monotonic()
        crawls[crawler] = (run_trawl(case, folder, overrides) if crawler == "trawl"
                           else run_scrapy(case, folder, scrapy_crawl_delay))
        print(f"  {case.name}: {crawler} fetched {crawls[crawler].pages} pages in {crawls[crawler].seconds:.1f} s"
              f" ({time.monotonic() - began:.0f} s with start-up; load {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
    return {"web": summary, "crawls": {name: asdict(crawls[name]) for name in CRAWLERS if name in crawls},
            "verdicts": verdicts(summary, crawls.get("trawl"), crawls.get("scrapy"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="Hosts and pages per host of every web, times this.")
    parser.add_argument("--webs", default=",".join(WEB_DELAYS), help="Which webs, comma-separated.")
    parser.add_argument("--crawlers", default=",".join(CRAWLERS), help="Which crawlers, comma-separated.")
    parser.add_argument("--no-cpu-bound", action="store_true", help="Skip measuring the CPU bound.")
    parser.add_argument("--scrapy-ignores-crawl-delay", action="store_true",
                        help="Do not give Scrapy the hosts' Crawl-delays as per-host delays (DOWNLOAD_SLOTS).")
    parser.add_argument("--log-dir", type=Path, help="Keep the web's request logs here (default: thrown away).")
    parser.add_argument("--trawl-env", action="append", default=[], metavar="NAME=VALUE",
                        help="A setting of Trawl's services on top of the defaults (repeatable).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    family = tree_family(args.scale)
    webs = [w for w in args.webs.split(",") if w]
    crawlers = tuple(c for c in args.crawlers.split(",") if c)
    if unknown := (set(webs) - set(family)) | (set(crawlers) - set(CRAWLERS)):
        parser.error(f"unknown webs or crawlers: {sorted(unknown)}")
    overrides = dict(item.split("=", 1) for item in args.trawl_env)
    results = []
    with tempfile.TemporaryDirectory(prefix="trawl-bench-polite-", dir="/var/tmp") as tmp:
        folder = args.log_dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(webs):
            case = build_case(name, family[name], WEB_DELAYS[name])
            print(f"{name}: {len(case.web.hosts)} hosts, {len(case.reachable)} reachable pages, politeness bound"
                  f" {case.bound.seconds:.1f} s", file=sys.stderr, flush=True)
            result = run_web(case, crawlers, overrides, folder, not args.no_cpu_bound, trawl_first=i % 2 == 0,
                             scrapy_crawl_delay=not args.scrapy_ignores_crawl_delay)
            results.append(result)
            if not args.json:
                print_web(result)
                sys.stdout.flush()
    out = {"benchmark": "polite_crawl", "scale": args.scale, "scrapy_concurrency": SCRAPY_CONCURRENCY,
           "scrapy_given_crawl_delays": not args.scrapy_ignores_crawl_delay,
           "trawl_env": overrides, "targets": TARGETS, "webs": results, "machine": machine()}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        m = out["machine"]
        print(f"machine: {m['cpus']} cpus, Python {m['python']}, load {m['load_average_1m_at_end']};"
              f" Scrapy CONCURRENT_REQUESTS {SCRAPY_CONCURRENCY}, given the Crawl-delays:"
              f" {'no' if args.scrapy_ignores_crawl_delay else 'yes'}; scale {args.scale}")


if __name__ == "__main__":
    main()
