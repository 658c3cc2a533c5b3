"""What a revisit costs, conditional against unconditional: bytes on the wire and CPU per revisited page.

Crawls a simulated web once with the whole local stack (``bench.trawl_stack_run``'s stack, the demo's
settings), then revisits every crawled page twice, after a round of edits each time
(``page_edit_ratio`` of the pages, drawn anew for each round: the web's served process moves its
clock on, ``SimWebProcess.advance``):

- conditional: the frontier sends each page's validators, so an unchanged page answers 304;
- unconditional: the frontier's validators are cleared first, so every page is fetched in full.

A pass is every fetched page made due at once in SQL (as a dispatch round queues revisits whose time has
come; no revisit the planner makes comes due meanwhile) and the scheduler woken, run until the frontier
is idle and every consumer group has no lag ("drained"). Per pass it reports, from the server's request
log, the bytes written to the fetcher (status line, headers, body) and the statuses, whether every
edited page was fetched again with a 200 ("found"), and from /proc the CPU seconds of every service, of
PostgreSQL and of the broker (``bench.proc_usage``), per revisited page, from the pass's start to the
moment it was seen drained (the seconds spent confirming it, the same idle stack for both passes, are
not counted):

- as measured ("CPU"), the stack's idle polling and this benchmark's own probes included;
- less what the idle stack spends for as long under the same probes ("net"): measured after the crawl
  for each of the two ways the benchmark watches a pass (while the frontier is busy: its counts every
  0.25 s; once it is idle: the consumer groups' lag too, which costs the broker as much again), and
  taken off each pass for the seconds it spent watched either way, so both passes lose the same rates.

The simulated web's server is shown apart: it is the world, not the crawler. The order of the two passes
alternates with ``--repeat``. The web is by default the end-to-end benchmarks' (``--web graph``): pages
of 9 KB on average (5-30 KB); ``--large-pages`` gives them five times the article text (37 KB on average,
14-130 KB: the size of served pages, though text where real pages carry markup, so extraction costs more
than it would). ``--web wide`` (or ``narrow``, ``deep``, ``mixed``) revisits a politeness benchmark's web
of structured sites at ``--scale`` instead: pages of 20-100 KB with the markup, scripts and styles of
served pages, its Crawl-delays left out so that a pass lasts what the minimum delay makes it.

    .venv/bin/python -m bench.revisit_cost [--pages 1000] [--hosts 50] [--gzip] [--large-pages] [--repeat 1]
        [--web graph|wide|narrow|deep|mixed] [--scale 0.3] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench import simweb_process
from bench.harness import machine
from bench.proc_usage import Sampler
from bench.trawl_stack_run import DEMO_TUNING, SETTLE_SECONDS, bench_stack, stack_parts
from cli.stack import local_stack
from cli.stack.layout import SERVICES, StackSettings
from libs.common.urls import normalize_url
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.process import SimWebProcess, build_served_web
from libs.simweb.request_log import RequestRecord
from libs.simweb.site_tree import TreeWebConfig, tree_family

SYSTEM = (*SERVICES, "postgres", "broker")
IDLE_SECONDS = 8.0  # per way of watching the stack
PROBE_EVERY = 0.25
REVISIT_ALL = ("UPDATE scheduler.frontier SET status = 'queued', attempts = 0, next_fetch_at = now()"
               " WHERE status = 'fetched'")
FORGET_VALIDATORS = "UPDATE scheduler.frontier SET etag = NULL, last_modified = NULL, validated_at = NULL"
# The web's days pass in minutes here, so the revisit planner would see pages change every few minutes and
# plan revisits within the passes: none comes sooner than a day after a fetch, the passes are the revisits.
TUNING = {**DEMO_TUNING, "TRAWL_FRESHNESS_MIN_INTERVAL": "86400"}


LARGE_PAGES = {"paragraphs_median": 80, "paragraphs_range": (30, 300)}  # 37 KB on average, 14-130 KB


def web_config(seed: int, hosts: int, pages: int, edit_ratio: float, large_pages: bool = False) -> SimWebConfig:
    """The end-to-end benchmarks' web (no hubs, no Crawl-delay, no robots.txt answering 503), every host
    honouring validators, ``edit_ratio`` of the pages edited a day; ``large_pages``: pages of served size."""
    sizes: dict[str, Any] = LARGE_PAGES if large_pages else {}
    return dataclasses.replace(simweb_process.web_config(seed, hosts, pages), page_edit_ratio=edit_ratio, **sizes)


def tree_web_config(name: str, scale: float, edit_ratio: float) -> TreeWebConfig:
    """The politeness benchmark's web ``name`` at ``scale`` (pages of 20-100 KB, markup, scripts and styles as
    served pages carry), ``edit_ratio`` of its pages edited a day, every host honouring validators, and no
    Crawl-delay: a pass then lasts what the minimum delay makes it, not what a few slow hosts do."""
    return dataclasses.replace(tree_family(scale)[name], page_edit_ratio=edit_ratio, crawl_delay_share=0.0)


@dataclass
class Drained:
    """When a pass was first seen drained, its CPU then, and how long it was watched each way until then."""

    at: float
    cpu: dict[str, float]
    watched: dict[str, float]  # "frontier": its counts alone; "lag": the consumer groups' lag too


@dataclass
class Pass:
    """One pass over the crawled pages, as the server and /proc saw it."""

    name: str
    pages: int = 0  # page requests (robots.txt apart)
    statuses: dict[int, int] = field(default_factory=dict)
    bytes_sent: int = 0  # every request of the pass, robots.txt included
    edited: int = 0
    found: int = 0  # edited pages fetched with a 200
    seconds: float = 0.0  # from the revisits' start to the pipeline drained: what the CPU figures span
    cpu: dict[str, float] = field(default_factory=dict)
    idle: dict[str, float] = field(default_factory=dict)  # CPU seconds the idle stack spends as long, as watched

    @property
    def system_cpu(self) -> float:
        return sum(self.cpu.get(part, 0.0) for part in SYSTEM)

    @property
    def services_cpu(self) -> float:
        return sum(self.cpu.get(part, 0.0) for part in SERVICES)

    def net(self, parts: tuple[str, ...]) -> float:
        """CPU seconds of ``parts`` less what they would have spent idle for as long (polling, timers, probes)."""
        return sum(max(0.0, self.cpu.get(p, 0.0) - self.idle.get(p, 0.0)) for p in parts)

    def figures(self) -> dict[str, Any]:
        per = max(1, self.pages)
        return {
            "pass": self.name, "pages": self.pages, "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "bytes": self.bytes_sent, "bytes_per_page": round(self.bytes_sent / per),
            "edited": self.edited, "found": self.found, "all_found": self.found == self.edited,
            "seconds": round(self.seconds, 1),
            "cpu_ms_per_page": round(1000 * self.system_cpu / per, 2),
            "services_cpu_ms_per_page": round(1000 * self.services_cpu / per, 2),
            "net_cpu_ms_per_page": round(1000 * self.net(SYSTEM) / per, 2),
            "net_services_cpu_ms_per_page": round(1000 * self.net(SERVICES) / per, 2),
            "cpu_ms_per_page_by_part": {p: round(1000 * s / per, 2) for p, s in sorted(self.cpu.items())},
            "net_cpu_ms_per_page_by_part": {p: round(1000 * self.net((p,)) / per, 2) for p in sorted(self.cpu)},
        }


class RevisitRig:
    """A stack crawling a served web, whose frontier can be made due at once."""

    def __init__(self, web: SimWebProcess, settings: StackSettings, dsn: str) -> None:
        self.web = web
        self.settings = settings
        self.dsn = dsn

    def sql(self, statement: str) -> None:
        with psycopg.connect(self.dsn) as conn:
            conn.execute(statement.encode())

    def fetched(self) -> set[str]:
        with psycopg.connect(self.dsn) as conn:
            return {str(r[0]) for r in conn.execute(b"SELECT url FROM scheduler.frontier WHERE status = 'fetched'")}

    def wait_settled(self, admin: Any, timeout: float, sampler: Sampler | None = None) -> Drained:
        """Waits for an idle frontier and no consumer lag, held ``SETTLE_SECONDS``; returns when it began, with
        the CPU since ``sampler``'s mark read then and the seconds watched each way until then."""
        started = time.monotonic()
        drained: Drained | None = None
        watched = {"frontier": 0.0, "lag": 0.0}
        while True:
            step = time.monotonic()
            stats = admin.stats()
            if step - started > timeout:
                raise TimeoutError(f"not settled within {timeout:.0f} s: {stats}")
            busy = stats["frontier"].get("queued", 0) + stats["in_flight"]
            lagging = busy > 0 or any(local_stack.lag_by_group(self.settings).values())
            now = time.monotonic()
            if not lagging:
                if drained is None:
                    cpu = cpu_since_mark(sampler) if sampler is not None else {}
                    drained = Drained(now, cpu, {**watched, "lag": watched["lag"] + now - step})
                elif now - drained.at >= SETTLE_SECONDS:
                    return drained
            else:
                drained = None
            time.sleep(PROBE_EVERY)
            watched["lag" if busy == 0 else "frontier"] += time.monotonic() - step

    def idle_rates(self, admin: Any, sampler: Sampler, lag: bool) -> dict[str, float]:
        """CPU seconds a second each part spends with nothing to do, watched as a pass is (``lag``: once drained)."""
        sampler.mark()
        started = time.monotonic()
        while time.monotonic() - started < IDLE_SECONDS:
            admin.stats()
            if lag:
                local_stack.lag_by_group(self.settings)
            time.sleep(PROBE_EVERY)
        seconds = time.monotonic() - started
        return {part: cpu / seconds for part, cpu in cpu_since_mark(sampler).items()}


def run_pass(rig: RevisitRig, admin: Any, sampler: Sampler, name: str, edited: set[str],
             timeout: float, idle: dict[str, dict[str, float]]) -> Pass:
    position = len(rig.web.request_log)
    if name == "unconditional":
        rig.sql(FORGET_VALIDATORS)
    sampler.mark()
    started = time.monotonic()
    rig.sql(REVISIT_ALL)
    admin.pause(False)  # queued behind the scheduler's back: wake its dispatcher, as their time coming would
    drained = rig.wait_settled(admin, timeout, sampler)
    spent = {part: sum(idle[way].get(part, 0.0) * seconds for way, seconds in drained.watched.items())
             for part in drained.cpu}
    log: list[RequestRecord] = rig.web.request_log[position:]
    pages = [r for r in log if r.path != "/robots.txt"]
    statuses: dict[int, int] = {}
    for record in pages:
        statuses[record.status] = statuses.get(record.status, 0) + 1
    refetched = {normalize_url(r.url) for r in pages if r.status == 200}
    return Pass(name, len(pages), statuses, sum(r.bytes_sent for r in log), len(edited), len(edited & refetched),
                drained.at - started, drained.cpu, spent)


def cpu_since_mark(sampler: Sampler) -> dict[str, float]:
    sampler.sample()
    return {part: usage.cpu_seconds for part, usage in sampler.usage.items()}


def edited_between(web: SimWeb, urls: set[str], before: Any, after: Any) -> set[str]:
    return {url for url in urls if web.etag(url, before) != web.etag(url, after)}


def run(config: SimWebConfig | TreeWebConfig, web: SimWeb, folder: Path, order: tuple[str, str], gzip: bool,
        timeout: float) -> dict[str, Any]:
    """``web``: the web ``config`` describes, as built here (the served process builds its own)."""
    served = SimWebProcess(config, folder / "revisits.log", gzip=gzip, render=True)
    served.start()
    try:
        with bench_stack(served.url, TUNING) as (settings, state, _env):
            rig = RevisitRig(served, settings, state.dsn)
            sampler = Sampler({**stack_parts(settings), "simweb": (served.pid, False)})
            sampler.start()
            with local_stack.admin_client(settings, state) as admin:
                crawl_started = time.monotonic()
                admin.add_seeds(web.home_pages())
                crawl_seconds = rig.wait_settled(admin, timeout).at - crawl_started
                crawled = rig.fetched()
                # what the stack spends idle, watched as a pass is, for reading the passes' figures
                idle = {way: rig.idle_rates(admin, sampler, way == "lag") for way in ("frontier", "lag")}
                passes = []
                moment = web.start_time
                for name in order:
                    served.advance()
                    later = moment + web.config.page_edit_interval
                    edited = edited_between(web, crawled, moment, later)
                    moment = later
                    passes.append(run_pass(rig, admin, sampler, name, edited, timeout, idle))
                    print(f"  {name}: {passes[-1].figures()}", file=sys.stderr, flush=True)
            sampler.stop()
            return {"crawled": len(crawled), "crawl_seconds": round(crawl_seconds, 1),
                    "idle_cpu_ms_per_second": {way: round(1000 * sum(rates.get(p, 0.0) for p in SYSTEM), 1)
                                               for way, rates in idle.items()},
                    "idle_cpu_ms_per_second_by_part": {way: {p: round(1000 * v, 1) for p, v in sorted(rates.items())}
                                                       for way, rates in idle.items()},
                    "passes": {p.name: p.figures() for p in passes}}
    finally:
        served.stop()


def mean_page_kb(web: SimWeb) -> float:
    """The web's mean page size in KB, as rendered (uncompressed)."""
    sizes = [len((web.html(url) or "").encode()) for url in web.pages]
    return round(sum(sizes) / max(1, len(sizes)) / 1000, 1)


def ratios(result: dict[str, Any]) -> dict[str, float]:
    conditional, full = result["passes"]["conditional"], result["passes"]["unconditional"]
    return {
        "bytes": round(conditional["bytes"] / max(1, full["bytes"]), 3),
        "cpu": round(conditional["cpu_ms_per_page"] / max(1e-9, full["cpu_ms_per_page"]), 3),
        "services_cpu": round(conditional["services_cpu_ms_per_page"] / max(1e-9, full["services_cpu_ms_per_page"]),
                              3),
        "net_cpu": round(conditional["net_cpu_ms_per_page"] / max(1e-9, full["net_cpu_ms_per_page"]), 3),
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"revisit cost, {result['web']} web: {result['pages']} pages of {result['mean_page_kb']} KB on average"
          f" on {result['hosts']} hosts,"
          f" {result['edit_ratio']:.0%} edited before each pass, gzip {'on' if result['gzip'] else 'off'};"
          f" {result['machine']}")
    for run_ in result["runs"]:
        idle = run_["idle_cpu_ms_per_second"]
        print(f"crawl: {run_['crawled']} pages in {run_['crawl_seconds']} s; idle, the stack spends"
              f" {idle['frontier']} ms of CPU a second watched, {idle['lag']} with the lag read too")
        print(f"{'pass':<14}{'pages':>7}{'200':>6}{'304':>6}{'bytes/page':>12}{'CPU ms/page':>13}"
              f"{'services':>10}{'net':>7}{'seconds':>9}{'found':>10}")
        for name, p in run_["passes"].items():
            print(f"{name:<14}{p['pages']:>7}{p['statuses'].get('200', 0):>6}{p['statuses'].get('304', 0):>6}"
                  f"{p['bytes_per_page']:>12}{p['cpu_ms_per_page']:>13}{p['services_cpu_ms_per_page']:>10}"
                  f"{p['net_cpu_ms_per_page']:>7}{p['seconds']:>9}{p['found']:>5}/{p['edited']:<4}")
        for name, p in run_["passes"].items():
            print(f"  {name} CPU ms/page by part: {p['cpu_ms_per_page_by_part']}")
            print(f"  {name} net CPU ms/page by part: {p['net_cpu_ms_per_page_by_part']}")
        r = ratios(run_)
        print(f"conditional / unconditional: bytes {r['bytes']:.1%}, CPU {r['cpu']:.1%}"
              f" (services alone {r['services_cpu']:.1%}; less the idle stack's CPU {r['net_cpu']:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--edit-ratio", type=float, default=0.2)
    parser.add_argument("--gzip", action="store_true", help="the web compresses its pages (it does not by default,"
                        " as in the other end-to-end benchmarks)")
    parser.add_argument("--large-pages", action="store_true", help="pages of served size (37 KB on average, not 9)")
    parser.add_argument("--web", choices=("graph", *tree_family()), default="graph",
                        help="graph: the end-to-end benchmarks' web (--pages, --hosts, --seed, --large-pages); or a"
                        " politeness benchmark's web of structured sites at --scale, without its Crawl-delays")
    parser.add_argument("--scale", type=float, default=0.3, help="the size of a politeness benchmark's web")
    parser.add_argument("--repeat", type=int, default=1, help="runs, the passes' order alternating")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    config = (web_config(args.seed, args.hosts, args.pages, args.edit_ratio, args.large_pages) if args.web == "graph"
              else tree_web_config(args.web, args.scale, args.edit_ratio))
    web = build_served_web(config)
    runs = []
    with tempfile.TemporaryDirectory(prefix="trawl-bench-revisits-", dir="/var/tmp") as tmp:
        for i in range(args.repeat):
            order = ("conditional", "unconditional") if i % 2 == 0 else ("unconditional", "conditional")
            runs.append(run(config, web, Path(tmp), order, args.gzip, args.timeout))
            runs[-1]["ratios"] = ratios(runs[-1])
    result = {"benchmark": "revisit_cost", "web": args.web, "pages": len(web.pages), "hosts": len(web.hosts),
              "edit_ratio": args.edit_ratio, "gzip": args.gzip, "mean_page_kb": mean_page_kb(web), "runs": runs,
              "machine": machine()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
