"""End to end: pages per second through all six services, against Scrapy and the extraction bound.

One web (``bench.simweb_process.web_config``: many hosts, so that politeness is not the
limit), served by its own process for each crawl, and four contenders in the same run,
repetitions rotating which goes first:

* **Trawl**: the whole local stack (broker, PostgreSQL, the six services as processes;
  ``bench.trawl_stack_run``) crawls the web from its home pages to an idle frontier;
* **Scrapy, 1 process**: ``bench.scrapy_spider`` (fetch, the extractor's trafilatura call,
  link following, an exact-duplicate check) over every host;
* **Scrapy, 2 processes**: two spiders at once, the hosts split between them (one per core);
* **bound**: bare trafilatura, the extractor's call, on the HTML of every page a polite
  crawl fetches, in two processes at once (the CPU bound of extraction on two cores).

Politeness is the same for Trawl and Scrapy: robots.txt obeyed, one request at a time per
host, a minimum delay of ``TRAWL_FETCHER_MIN_DELAY`` (demo: 0.2 s; Trawl also waits 5 times
the last response time when that is longer, Scrapy's delay runs start to start), at most
``TRAWL_FETCHER_CONCURRENCY`` (demo: 100) requests being fetched at once (Scrapy's
``CONCURRENT_REQUESTS``; Trawl's scheduler may hand out up to ``TRAWL_SCHEDULER_MAX_IN_FLIGHT``,
demo: 300, counting requests on their way through the broker and outcomes on their way back).
A crawler's rate is judged from the web server's log alone, the same way for all: HTML pages
answered 200 (robots.txt excluded) divided by the time from the first request to the end of
the last page's response. The same log is checked for
politeness (requests in flight per host, the smallest end-to-start gap) and robots.txt.

For Trawl the table also gives what each process spent per page (CPU ms from /proc) and
the consumer lag of each service's group (sampled every 3 s), which is where to look for
the pipeline's bottleneck.

    .venv/bin/python -m bench.e2e_vs_scrapy [--hosts 400 --pages 4000 --seed 7 --repeat 3] [--json]
        [--trawl-env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO, Series, machine
from bench.proc_usage import PartUsage, Sampler
from bench.simweb_process import WebSpec, rendered_web, served_web
from bench.trawl_stack_run import StackCrawl, crawl_with_stack
from cli.demo import DEMO_ENV
from libs.simweb import SimWeb
from libs.simweb.log_checks import max_concurrency_per_host, min_gap_per_host, robots_violations
from libs.simweb.request_log import RequestRecord

MIN_DELAY = float(DEMO_ENV["TRAWL_FETCHER_MIN_DELAY"])
IN_FLIGHT = int(DEMO_ENV["TRAWL_FETCHER_CONCURRENCY"])  # requests being fetched at once, for both crawlers
TARGETS = {"scrapy_1": 1.5, "scrapy_2": 1.0, "bound": 0.7}
CONTENDERS = ("trawl", "scrapy_1", "scrapy_2", "bound")


@dataclass
class Workload:
    spec: WebSpec
    web: SimWeb
    reachable: list[str]  # every page a polite crawl from the home pages fetches, sorted
    html: list[tuple[str, str]]  # (url, HTML) of each reachable page

    @property
    def hosts(self) -> list[str]:
        return sorted(self.web.hosts)


def build_workload(seed: int, hosts: int, pages: int) -> Workload:
    spec = WebSpec(seed, hosts, pages)
    web = rendered_web(spec.config)
    reachable = sorted(web.reachable(web.home_pages()))
    html = [(url, text) for url in reachable if (text := web.html(url)) is not None]
    return Workload(spec, web, reachable, html)


@dataclass(frozen=True)
class LogFigures:
    """A crawl as the server saw it."""

    pages: int
    requests: int
    seconds: float
    max_in_flight_per_host: int
    min_gap: float
    robots_violations: int

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0


def log_figures(log: list[RequestRecord], web: SimWeb) -> LogFigures:
    pages = [r for r in log if r.is_page]
    if not pages:
        return LogFigures(0, len(log), 0.0, 0, 0.0, 0)
    seconds = max(r.finished_at for r in pages) - min(r.started_at for r in log)
    gaps = min_gap_per_host(log)
    return LogFigures(len(pages), len(log), seconds, max(max_concurrency_per_host(log).values()),
                      min(gaps.values()) if gaps else 0.0, len(robots_violations(log, web)))


@dataclass
class Contender:
    name: str
    series: Series
    figures: list[LogFigures] = field(default_factory=list)
    cpu_ms_per_page: list[dict[str, float]] = field(default_factory=list)
    lag: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _cpu_per_page(usage: dict[str, PartUsage], pages: int) -> dict[str, float]:
    return {name: round(part.cpu_seconds * 1000 / max(pages, 1), 2) for name, part in usage.items()}


def run_trawl(work: Workload, folder: Path, overrides: dict[str, str]) -> tuple[LogFigures, StackCrawl]:
    web = served_web(work.spec, folder / "trawl.log")
    web.start()
    try:
        crawl = crawl_with_stack(web, work.web.home_pages(), overrides=overrides)
    finally:
        web.stop()
    return log_figures(crawl.log, work.web), crawl


def run_scrapy(work: Workload, folder: Path, processes: int) -> tuple[LogFigures, dict[str, PartUsage]]:
    web = served_web(work.spec, folder / f"scrapy-{processes}.log")
    proxy = web.start()
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "https_proxy", "all_proxy")}
    env.update({"http_proxy": proxy, "PYTHONUNBUFFERED": "1"})
    spiders = []
    try:
        for i in range(processes):
            hosts_file = folder / f"hosts-{processes}-{i}"
            hosts_file.write_text("\n".join(work.hosts[i::processes]) + "\n")
            spiders.append(subprocess.Popen(
                [sys.executable, "-m", "bench.scrapy_spider", "--hosts-file", str(hosts_file), "--out",
                 str(folder / f"scrapy-{processes}-{i}.json"), "--min-delay", str(MIN_DELAY),
                 "--concurrency", str(IN_FLIGHT)], cwd=REPO, env=env))
        sampler = Sampler({f"scrapy-{i}": (p.pid, False) for i, p in enumerate(spiders)} | {"simweb": (web.pid, False)})
        sampler.start()
        sampler.mark()  # the web's rendering is not counted; a spider's start-up (imports) is
        for p in spiders:
            if p.wait() != 0:
                raise RuntimeError(f"a Scrapy process failed with {p.returncode}")
        usage = sampler.stop()
        return log_figures(web.request_log, work.web), usage
    finally:
        for p in spiders:
            if p.poll() is None:
                p.kill()
        web.stop()


def _extract_share(pages: list[tuple[str, str]], start: Any, done: Any) -> None:
    from trafilatura import bare_extraction

    from services.extractor.content import date_params

    params = date_params(int(time.time() * 1000))
    start.wait()
    cpu = time.process_time()
    for url, html in pages:
        bare_extraction(html, url=url, fast=True, with_metadata=True, include_comments=False,
                        date_extraction_params=params)
    done.put(time.process_time() - cpu)


def run_bound(work: Workload, processes: int = 2) -> tuple[float, float]:
    """Pages per second of ``processes`` processes extracting their share at once; and per CPU-second."""
    context = multiprocessing.get_context("fork")
    start, done = context.Event(), context.Queue()
    workers = [context.Process(target=_extract_share, args=(work.html[i::processes], start, done))
               for i in range(processes)]
    for w in workers:
        w.start()
    time.sleep(0.5)
    began = time.monotonic()
    start.set()
    cpu = sum(done.get() for _ in workers)
    elapsed = time.monotonic() - began
    for w in workers:
        w.join()
    return len(work.html) / elapsed, len(work.html) / cpu


def compare(work: Workload, repeat: int, overrides: dict[str, str], folder: Path,
            only: tuple[str, ...] = CONTENDERS, variant: dict[str, str] | None = None) -> dict[str, Contender]:
    """Every contender ``repeat`` times, rotating which goes first; with ``variant``, Trawl also runs
    with those settings on top of ``overrides`` (contender ``trawl_b``), right after plain Trawl."""
    contenders = {name: Contender(label, Series(label)) for name, label in (
        ("trawl", "Trawl, six services"), ("trawl_b", f"Trawl with {variant}"), ("scrapy_1", "Scrapy, 1 process"),
        ("scrapy_2", "Scrapy, 2 processes splitting the hosts"), ("bound", "bare trafilatura, 2 processes (bound)"))}

    def trawl(name: str, env: dict[str, str]) -> Callable[[], None]:
        def run() -> None:
            figures, crawl = run_trawl(work, folder, env)
            c = contenders[name]
            c.series.rates.append(figures.rate)
            c.figures.append(figures)
            c.cpu_ms_per_page.append(_cpu_per_page(crawl.usage, figures.pages))
            c.lag.append({"max": crawl.max_lag, "mean": {k: round(v, 1) for k, v in crawl.mean_lag.items()},
                          "seconds_to_idle": round(crawl.seconds_to_idle, 1),
                          "messages_per_page": {t.removeprefix("trawl."): round(n / max(figures.pages, 1), 2)
                                                for t, n in sorted(crawl.messages.items()) if n}})
        return run

    def scrapy(processes: int) -> Callable[[], None]:
        def run() -> None:
            figures, usage = run_scrapy(work, folder, processes)
            c = contenders[f"scrapy_{processes}"]
            c.series.rates.append(figures.rate)
            c.figures.append(figures)
            c.cpu_ms_per_page.append(_cpu_per_page(usage, figures.pages))
        return run

    def bound() -> None:
        rate, per_cpu = run_bound(work)
        contenders["bound"].series.rates.append(rate)
        contenders["bound"].cpu_ms_per_page.append({"trafilatura-0": 500 / per_cpu, "trafilatura-1": 500 / per_cpu})

    runs = [(n, r) for n, r in (("trawl", trawl("trawl", overrides)), ("scrapy_1", scrapy(1)), ("scrapy_2", scrapy(2)),
                                ("bound", bound)) if n in only]
    if variant:
        runs.insert(1, ("trawl_b", trawl("trawl_b", {**overrides, **variant})))
    for i in range(repeat):
        order = runs[i % len(runs):] + runs[: i % len(runs)]
        for name, run in order:
            run()
            rate = contenders[name].series.rates[-1]
            print(f"  repetition {i + 1}/{repeat}: {contenders[name].name}: {rate:,.1f} pages/s"
                  f" (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    return contenders


SHARED_PARTS = ("simweb", "postgres", "broker")  # the web is not the crawler's; these two are multi-process/threaded


def cpu_figures(runs: list[dict[str, float]]) -> dict[str, float]:
    """Median CPU ms per page of a contender (the web's server excluded), and the rate its CPU use
    allows on two otherwise idle cores: all of its processes share two cores, and none of them can use
    more than one (PostgreSQL and the broker, which spread over processes or threads, excepted)."""
    totals = [sum(v for k, v in run.items() if k != "simweb") for run in runs]
    busiest = [max((v for k, v in run.items() if k not in SHARED_PARTS), default=0.0) for run in runs]
    total, single = statistics.median(totals), statistics.median(busiest)
    return {"cpu_ms_per_page": round(total, 2), "busiest_process_ms_per_page": round(single, 2),
            "pages_per_cpu_second": round(1000 / total, 1),
            "two_idle_cores_pages_per_second": round(min(2000 / total, 1000 / single), 1)}


def summary(work: Workload, contenders: dict[str, Contender], args: argparse.Namespace) -> dict[str, Any]:
    trawl = contenders["trawl"].series.median
    out: dict[str, Any] = {
        "benchmark": "e2e_vs_scrapy",
        "workload": {"seed": args.seed, "hosts": args.hosts, "pages_configured": args.pages,
                     "pages_reachable_and_allowed": len(work.reachable), "min_delay": MIN_DELAY,
                     "in_flight": IN_FLIGHT, "trawl_env": args.trawl_env},
        "contenders": {},
        "ratios": {},
        "ratios_b": {},
        "machine": machine(),
    }
    for name, c in contenders.items():
        if not c.series.rates:
            continue
        out["contenders"][name] = {
            "name": c.name, "rates": [round(r, 1) for r in c.series.rates], "median": round(c.series.median, 1),
            "figures": [f.__dict__ | {"rate": round(f.rate, 1)} for f in c.figures],
            "cpu_ms_per_page": c.cpu_ms_per_page, "lag": c.lag, "notes": c.notes,
            "cpu": cpu_figures(c.cpu_ms_per_page) if c.cpu_ms_per_page else {},
        }
        if name in TARGETS and contenders["trawl"].series.rates:
            ratio = trawl / c.series.median if c.series.median else 0.0
            out["ratios"][name] = {"ratio": round(ratio, 2), "target": TARGETS[name], "met": ratio >= TARGETS[name]}
            if contenders["trawl_b"].series.rates:
                out["ratios_b"][name] = round(contenders["trawl_b"].series.median / c.series.median, 2)
    return out


def print_summary(s: dict[str, Any]) -> None:
    w = s["workload"]
    print(f"e2e_vs_scrapy: pages/s on a simulated web of {w['hosts']} hosts, {w['pages_reachable_and_allowed']}"
          f" reachable allowed pages (seed {w['seed']}); min delay {w['min_delay']} s, one request per host,"
          f" {w['in_flight']} in flight; median of {len(s['contenders']['trawl']['rates'])} rotated repetitions")
    print(f"  {'':<42}{'median':>9}{'min':>9}{'max':>9}   pages  max/host  min gap  robots")
    for c in s["contenders"].values():
        pages = "/".join(str(f["pages"]) for f in c["figures"]) or "-"
        hosts = max((f["max_in_flight_per_host"] for f in c["figures"]), default=0)
        gap = min((f["min_gap"] for f in c["figures"]), default=0.0)
        robots = sum(f["robots_violations"] for f in c["figures"])
        rates = c["rates"]
        print(f"  {c['name']:<42}{c['median']:>9.1f}{min(rates):>9.1f}{max(rates):>9.1f}   {pages}"
              + (f"  {hosts}  {gap:.3f}  {robots}" if c["figures"] else ""))
    for name, r in s["ratios"].items():
        print(f"  Trawl / {s['contenders'][name]['name']}: {r['ratio']:.2f}x (target {r['target']}x:"
              f" {'met' if r['met'] else 'NOT met'})")
    for name, ratio in s["ratios_b"].items():
        print(f"  {s['contenders']['trawl_b']['name']} / {s['contenders'][name]['name']}: {ratio:.2f}x")
    for name in ("trawl", "trawl_b", "scrapy_1", "scrapy_2"):
        for i, per_page in enumerate(s["contenders"].get(name, {}).get("cpu_ms_per_page", [])):
            total = sum(v for k, v in per_page.items() if k != "simweb")
            parts = ", ".join(f"{k} {v}" for k, v in per_page.items())
            print(f"  CPU ms per page, {name} run {i + 1}: {total:.2f} ({parts})")
    for name, i, lag in ((n, i, lag) for n in ("trawl", "trawl_b")
                         for i, lag in enumerate(s["contenders"].get(n, {}).get("lag", []))):
        print(f"  {name} run {i + 1}: seeding to idle {lag['seconds_to_idle']} s; consumer lag max {lag['max']},"
              f" mean {lag['mean']}")
        print(f"    messages per page by topic: {lag['messages_per_page']}")
    print("  CPU (medians): ms per page, busiest part (a service with its worker processes), and the rate that"
          " allows on two idle cores")
    trawl_cpu = s["contenders"].get("trawl", {}).get("cpu", {})
    for c in s["contenders"].values():
        cpu = c["cpu"]
        if cpu:
            key = "two_idle_cores_pages_per_second"
            ratio = f"  Trawl / this {trawl_cpu[key] / cpu[key]:.2f}x" if trawl_cpu else ""
            print(f"    {c['name']:<42}{cpu['cpu_ms_per_page']:>8.2f} ms {cpu['busiest_process_ms_per_page']:>7.2f} ms"
                  f" {cpu['two_idle_cores_pages_per_second']:>8.1f} pages/s{ratio}")
    m = s["machine"]
    print(f"  machine: {m['cpus']} cpus, Python {m['python']}, load {m['load_average_1m_at_end']}")


def add_web_options(parser: argparse.ArgumentParser) -> None:
    """The simulated web's size and seed, and Trawl's settings for the run."""
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--pages", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--trawl-env", action="append", default=[], metavar="NAME=VALUE",
                        help="A setting of Trawl's services for this run (repeatable).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variant-env", action="append", default=[], metavar="NAME=VALUE",
                        help="Also run Trawl with these settings on top (contender trawl_b, after plain Trawl).")
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help=f"Which to run, comma-separated (default: all of {','.join(CONTENDERS)}).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    only = tuple(name for name in args.contenders.split(",") if name)
    if unknown := set(only) - set(CONTENDERS):
        parser.error(f"unknown contenders: {sorted(unknown)}")
    overrides = dict(item.split("=", 1) for item in args.trawl_env)
    work = build_workload(args.seed, args.hosts, args.pages)
    print(f"web: {len(work.hosts)} hosts, {len(work.reachable)} reachable allowed pages", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="trawl-bench-e2e-", dir="/var/tmp") as tmp:
        variant = dict(item.split("=", 1) for item in args.variant_env)
        contenders = compare(work, args.repeat, overrides, Path(tmp), only, variant or None)
    result = summary(work, contenders, args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_summary(result)


if __name__ == "__main__":
    main()
