"""``trawl demo``: crawl the built-in simulated web on the local stack, with live progress.

The demo always starts a fresh crawl: its own database (``trawl_demo``, recreated) and its
own topics (a new prefix), so running it twice gives the same result. The simulated web
is served on loopback by a process of its own (``libs.simweb.process``), whose request log
the summary judges politeness by; the fetcher reaches it through its ordinary proxy setting.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import grpc
import psycopg
from rich.live import Live
from rich.table import Table

from cli.admin_client import AdminClient
from cli.crawl_report import crawl_report, print_report
from cli.output import console
from cli.stack import local_stack
from cli.stack.layout import StackSettings
from libs.localinfra.pgadmin import create_database, drop_database, dsn_with_database
from libs.simweb import SimWebConfig, build_web
from libs.simweb.process import SimWebProcess

DEMO_DATABASE = "trawl_demo"

# Politeness for a loopback web: short gaps, so 5,000 pages crawl in minutes; robots.txt
# Crawl-delay still applies, and the summary checks every gap from the server's log.
DEMO_ENV = {
    "TRAWL_FETCHER_MIN_DELAY": "0.2",
    # Requests on the wire at once (those waiting for their host's gap hold no place there).
    "TRAWL_FETCHER_CONCURRENCY": "100",
    # The machine's two cores for the costliest stage, extraction (docs/benchmarks.md, "End to end").
    "TRAWL_EXTRACTOR_PROCESSES": "2",
    "TRAWL_SCHEDULER_RETRY_BASE_SECONDS": "2",
    # The simulated web's hosts are allowed by name through the SSRF guard, which is strict here:
    # a name the fetcher cannot resolve itself is not left to the proxy unless allowed.
    "TRAWL_FETCHER_SSRF_ALLOW": "*.test",
    "TRAWL_FETCHER_SSRF_PROXY_UNRESOLVED": "false",
    # No gap of the demo web exceeds 2 s, so a partition taken over need not hold its hosts longer.
    "TRAWL_FETCHER_HANDOFF_DELAY": "2",
    # Dispatch rounds when no host is free yet are most of what the scheduler spends idle (an outcome
    # still wakes the dispatcher at once). The local broker's fetch waits are the local stack's
    # (cli/stack/local_stack.py, LOCAL_BROKER_ENV).
    "TRAWL_SCHEDULER_DISPATCH_INTERVAL": "0.1",
    # 20 ms more than the delay. The simulated web stamps a response's end right before writing its body,
    # so the gap it logs is at least the delay without a margin; a server that stamps the end when its
    # process gets to it, on the same two loaded cores, could log less. The demo was no faster without
    # it: a crawl of 64.1 and 65.8 s against 65.2 (docs/benchmarks.md).
    "TRAWL_FETCHER_GAP_MARGIN": "0.02",
}


def demo_web_config(seed: int, hosts: int, pages: int) -> SimWebConfig:
    """The demo's web: sites of less unequal sizes and short Crawl-delays, so that politeness
    (one request at a time per host) still lets a few thousand pages crawl in minutes."""
    return SimWebConfig(seed=seed, hosts=hosts, pages=pages, host_size_exponent=0.3, crawl_delay_values=(0.3, 0.5))


def _progress_table(stats: dict[str, Any], elapsed: float, rate: float) -> Table:
    table = Table(title=f"Crawling the simulated web - {elapsed:5.0f} s")
    for col in ("fetched", "queued", "in flight", "robots-blocked", "failed", "hosts", "pages/s"):
        table.add_column(col, justify="right")
    frontier = stats["frontier"]
    table.add_row(
        str(stats["fetched"]), str(frontier.get("queued", 0)), str(stats["in_flight"]),
        str(stats["robots_blocked"]), str(stats["failed"]), str(stats["hosts"]), f"{rate:.1f}",
    )
    return table


def wait_for_crawl(admin: AdminClient, timeout: float, quiet: bool, settle: float = 4.0) -> dict[str, Any]:
    """Polls the scheduler until nothing is queued or in flight for ``settle`` seconds."""
    started = time.monotonic()
    idle_since: float | None = None
    stats = admin.stats()
    last_fetched, last_time, rate = 0, started, 0.0
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        while time.monotonic() - started < timeout:
            try:
                stats = admin.stats()
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                idle_since = None  # the scheduler is restarting (after a broker restart, say): ask again
                time.sleep(0.5)
                continue
            now = time.monotonic()
            if now - last_time >= 1.0:
                rate = (stats["fetched"] - last_fetched) / (now - last_time)
                last_fetched, last_time = stats["fetched"], now
            if not quiet:
                live.update(_progress_table(stats, now - started, rate))
            busy = stats["frontier"].get("queued", 0) + stats["in_flight"]
            if busy == 0 and stats["fetched"] > 0:
                idle_since = idle_since or now
                if now - idle_since >= settle:
                    return stats
            else:
                idle_since = None
            time.sleep(0.25)
    raise TimeoutError(f"the crawl did not finish within {timeout:.0f} s: {stats}")


def run_demo(settings: StackSettings, env: Mapping[str, str], *, hosts: int, pages: int, seed: int,
             timeout: float, keep_up: bool, quiet: bool) -> dict[str, Any]:
    started = time.monotonic()
    config = demo_web_config(seed, hosts, pages)
    web = build_web(config)
    log_dir = settings.root / "demo"
    log_dir.mkdir(parents=True, exist_ok=True)
    simweb = SimWebProcess(config, log_dir / "simweb-requests.jsonl")
    proxy = simweb.start()
    if not quiet:
        console.print(f"simulated web: {len(web.pages)} pages on {len(web.hosts)} hosts, served at {proxy}")
    try:
        local_stack.stop_services(settings)  # a running stack restarts with the demo's settings
        admin_dsn = local_stack.ensure_postgres(settings, env)
        drop_database(admin_dsn, DEMO_DATABASE)
        create_database(admin_dsn, DEMO_DATABASE)
        demo_env = {**env, **DEMO_ENV, "TRAWL_FETCHER_PROXY": proxy,
                    "TRAWL_TOPIC_PREFIX": f"demo-{int(time.time())}.",
                    "TRAWL_FETCHER_WARC_DIR": env.get("TRAWL_FETCHER_WARC_DIR") or str(settings.root / "warc" / "demo")}
        if "TRAWL_DATABASE_URL" in env:
            demo_env["TRAWL_DATABASE_URL"] = dsn_with_database(env["TRAWL_DATABASE_URL"], DEMO_DATABASE)
        state = local_stack.up(settings, demo_env, database=DEMO_DATABASE)
        if not quiet:
            console.print(f"stack up in {time.monotonic() - started:.1f} s; seeding {len(web.home_pages())} hosts")
        crawl_started = time.monotonic()
        with local_stack.admin_client(settings, state) as admin:
            admin.add_seeds(web.home_pages())
            wait_for_crawl(admin, timeout, quiet)
        crawl_seconds = time.monotonic() - crawl_started
        with psycopg.connect(state.dsn) as conn:
            report = crawl_report(conn, web, simweb.request_log, crawl_seconds,
                                  min_delay=float(DEMO_ENV["TRAWL_FETCHER_MIN_DELAY"]))
        report["total_seconds"] = round(time.monotonic() - started, 1)
        if not quiet:
            print_report(report)
        return report
    finally:
        if not keep_up:
            local_stack.down(settings)
        simweb.stop()


def demo_failures(report: Mapping[str, Any]) -> list[str]:
    """What the demo's own checks found wrong (empty when the crawl did what it should)."""
    failures = []
    if report.get("missed"):
        failures.append(f"{report['missed']} reachable, allowed pages were not fetched")
    politeness = report.get("politeness", {})
    if not politeness.get("ok", False):
        failures.append(f"politeness or robots.txt violated, by the server's request log: {politeness}")
    return failures


def run_real_crawl(settings: StackSettings, env: Mapping[str, str], urls: list[str], *, max_pages: int,
                   timeout: float) -> int:
    """Crawls real seed URLs; fails clearly (exit 3) when the internet cannot be reached."""
    import socket
    from urllib.parse import urlsplit

    for url in urls:
        host = urlsplit(url).hostname or ""
        try:
            socket.getaddrinfo(host, 443, proto=socket.IPPROTO_TCP)
            socket.create_connection((host, 443), timeout=5).close()
        except OSError as exc:
            console.print(f"[red]cannot reach {host}: {exc}. Is this machine on the internet?[/red]")
            return 3
    state = local_stack.up(settings, env)
    with local_stack.admin_client(settings, state) as admin:
        admin.add_seeds(urls)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = admin.stats()
            console.print(f"fetched {stats['fetched']}, queued {stats['frontier'].get('queued', 0)}")
            if stats["fetched"] >= max_pages:
                admin.pause(True)
                break
            time.sleep(2)
    console.print("crawl paused; `trawl stats` shows the frontier, `trawl down` stops the stack")
    return 0
