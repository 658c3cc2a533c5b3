"""The whole crawler on the demo's simulated web: pages per second against the politeness ceiling.

Runs the real demo crawl (``cli.demo.run_demo``: broker, PostgreSQL, the six services,
the simulated web on loopback) in a throwaway home under /var/tmp on free ports, and
compares the time it took with the least time any polite crawler needs on that web.

The ceiling: a polite crawler sends one request at a time to a host, at least
``max(min_delay, Crawl-delay)`` apart. A host with ``n`` reachable, allowed pages takes
``n + 1`` requests (its robots.txt first), hence at least ``n x delay`` seconds, and the
crawl cannot end before its slowest host does: bound = max over hosts of ``n x delay``.
The bound ignores the response-time factor of the politeness gap and the time to discover
each URL (a page is only known once a page linking to it was fetched and extracted), so no
crawler reaches it; the ratio says how far above it the crawl is.

The measured crawl time runs from seeding to the moment the frontier has been empty for the
demo's settle period; that period is subtracted (both figures are printed).

    .venv/bin/python -m bench.crawl [--pages 2000 --hosts 40 --seed 7] [--json]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import machine
from cli.demo import DEMO_ENV, demo_web_config, run_demo, wait_for_crawl
from cli.stack.layout import SERVICES, StackSettings
from libs.common.settings import load_settings
from libs.localinfra.ports import free_port, port_open
from libs.simweb import SimWeb, build_web

SETTLE_SECONDS: float = inspect.signature(wait_for_crawl).parameters["settle"].default


@dataclass(frozen=True)
class Ceiling:
    """The fastest a polite crawl of a web can be, and the host that decides it."""

    seconds: float
    slowest_host: str
    slowest_host_pages: int
    slowest_host_delay: float
    reachable_pages: int

    @property
    def pages_per_second(self) -> float:
        return self.reachable_pages / self.seconds if self.seconds else float("inf")


def politeness_ceiling(web: SimWeb, min_delay: float) -> Ceiling:
    """Per host, (reachable allowed pages) x max(min_delay, Crawl-delay); the largest wins."""
    reachable = web.reachable(web.home_pages())
    pages_per_host = Counter(web.pages[url].host for url in reachable)
    bound, slowest, slowest_n, slowest_delay = 0.0, "", 0, 0.0
    for host, n in sorted(pages_per_host.items()):
        delay = max(min_delay, web.crawl_delay(host) or 0.0)
        if n * delay > bound:
            bound, slowest, slowest_n, slowest_delay = n * delay, host, n, delay
    return Ceiling(bound, slowest, slowest_n, slowest_delay, len(reachable))


def _free_block(size: int) -> int:
    """A first port such that it and the ``size - 1`` after it are free now (the services' gRPC ports)."""
    for _ in range(50):
        base = free_port()
        if base + size < 65000 and not any(port_open("127.0.0.1", base + i) for i in range(size)):
            return base
    raise RuntimeError("no block of free ports")


def stack_env(home: Path) -> dict[str, str]:
    """This process's environment without any TRAWL_ setting, plus a home and ports of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update({
        "TRAWL_HOME": str(home),
        "TRAWL_LOCAL_BROKER_PORT": str(free_port()),
        "TRAWL_LOCAL_POSTGRES_PORT": str(free_port()),
        "TRAWL_LOCAL_GRPC_BASE_PORT": str(_free_block(len(SERVICES))),
        "TRAWL_LOCAL_METRICS_BASE_PORT": "0",
    })
    return env


def run_crawl(pages: int, hosts: int, seed: int, timeout: float) -> dict[str, Any]:
    """One demo crawl in a throwaway home; returns the demo's report."""
    home = Path(tempfile.mkdtemp(prefix="trawl-bench-crawl-", dir="/var/tmp"))
    home.chmod(0o755)  # the PostgreSQL account must be able to enter it
    try:
        env = stack_env(home)
        settings = load_settings(StackSettings, env)
        return run_demo(settings, env, hosts=hosts, pages=pages, seed=seed, timeout=timeout, keep_up=False,
                        quiet=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def summarise(report: dict[str, Any], ceiling: Ceiling, args: dict[str, Any]) -> dict[str, Any]:
    crawl_s = float(report["crawl_seconds"])
    active_s = max(crawl_s - SETTLE_SECONDS, 1e-9)
    fetched = int(report["pages_fetched"])
    return {
        "benchmark": "crawl",
        "workload": args,
        "pages_fetched": fetched,
        "pages_reachable_and_allowed": report["pages_reachable_and_allowed"],
        "missed": report["missed"],
        "politeness_respected": report["politeness"]["ok"],
        "crawl_seconds_with_settle": crawl_s,
        "settle_seconds": SETTLE_SECONDS,
        "crawl_seconds": round(active_s, 1),
        "pages_per_second": round(fetched / active_s, 1),
        "ceiling_seconds": round(ceiling.seconds, 1),
        "ceiling_pages_per_second": round(ceiling.pages_per_second, 1),
        "ceiling_host": {
            "host": ceiling.slowest_host,
            "pages": ceiling.slowest_host_pages,
            "delay_seconds": ceiling.slowest_host_delay,
        },
        "time_over_ceiling": round(active_s / ceiling.seconds, 2) if ceiling.seconds else None,
        "fetch_order_vs_pagerank_spearman": report["fetch_order_vs_pagerank_spearman"],
        "total_seconds": report["total_seconds"],
        "machine": machine(),
    }


def print_summary(s: dict[str, Any]) -> None:
    w = s["workload"]
    print(f"crawl: the demo crawl, {w['pages']} pages on {w['hosts']} hosts (seed {w['seed']})")
    print(f"  pages fetched:           {s['pages_fetched']} of {s['pages_reachable_and_allowed']} reachable"
          f" ({s['missed']} missed), politeness {'respected' if s['politeness_respected'] else 'VIOLATED'}")
    print(f"  crawl time:              {s['crawl_seconds']:8.1f} s   ({s['crawl_seconds_with_settle']} s less"
          f" the {s['settle_seconds']} s settle)")
    print(f"  pages/s:                 {s['pages_per_second']:8.1f}")
    host = s["ceiling_host"]
    print(f"  baseline, polite ceiling: {s['ceiling_seconds']:7.1f} s   ({host['host']}: {host['pages']} pages"
          f" x {host['delay_seconds']} s)")
    print(f"  ceiling pages/s:         {s['ceiling_pages_per_second']:8.1f}")
    print(f"  crawl time / ceiling:    {s['time_over_ceiling']:8.2f}x")
    print(f"  whole run (stack up, crawl, report, down): {s['total_seconds']} s")
    m = s["machine"]
    print(f"  machine: {m['cpus']} cpus, Python {m['python']}, load {m['load_average_1m_at_end']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=600.0, help="Give up on the crawl after this long.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    web = build_web(demo_web_config(args.seed, args.hosts, args.pages))
    ceiling = politeness_ceiling(web, float(DEMO_ENV["TRAWL_FETCHER_MIN_DELAY"]))
    report = run_crawl(args.pages, args.hosts, args.seed, args.timeout)
    summary = summarise(report, ceiling, {"pages": args.pages, "hosts": args.hosts, "seed": args.seed})
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(summary)


if __name__ == "__main__":
    main()
