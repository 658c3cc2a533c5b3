"""Politeness across Kafka rebalances: fetchers added, killed and stopped mid-crawl, judged from the server.

Two fetcher processes start the crawl; a third joins (partitions move to it),
one of the first two is killed (its partitions move after the session times
out, its uncommitted requests are delivered again), then the third is stopped
(it settles its partitions and hands them back). Through all of it the
simulated web must see every host served one request at a time, with at least
the host's gap between the end of one response and the next request, and every
reachable page fetched.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.stack import health
from cli.stack.processes import ServiceProcess
from libs.common.urls import normalize_url
from libs.localinfra.ports import free_port
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.log_checks import max_concurrency_per_host, min_gap_per_host, robots_violations
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_harness import CrawlStack, crawl_stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# Slow hosts (up to 2 s a response) and long gaps (a Crawl-delay of 5 s, twice the response time) make
# requests straddle every move: without the handoff rules the new owner overlaps or crowds the old one.
WEB = SimWebConfig(
    seed=23, hosts=30, pages=300, host_size_exponent=0.2, hub_host_ratio=0.0, latency_range=(0.1, 2.0),
    crawl_delay_host_ratio=0.1, crawl_delay_values=(5.0,), robots_unavailable_ratio=0.0,
)
MIN_DELAY, FACTOR, CRAWL_DELAY_CAP = 0.1, 2.0, 5.0
FETCHER_ENV = {
    "TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY),
    "TRAWL_FETCHER_RESPONSE_TIME_FACTOR": str(FACTOR),
    "TRAWL_FETCHER_MAX_CRAWL_DELAY": str(CRAWL_DELAY_CAP),
    "TRAWL_FETCHER_HANDOFF_DELAY": "5.5",  # covers the largest gap of this web: the Crawl-delay
    "TRAWL_FETCHER_HANDOFF_GRACE": "1",
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
}
TOLERANCE = 0.005


class Fetchers:
    """The stack's fetcher plus extra fetcher processes in the same consumer group."""

    def __init__(self, stack: CrawlStack, logs: Path) -> None:
        self._stack = stack
        self._logs = logs
        self._base = {**stack.processes["fetcher"].env, **FETCHER_ENV}
        stack.processes["fetcher"].env.update(FETCHER_ENV)
        self.extra: dict[str, tuple[ServiceProcess, str]] = {}

    def start(self, name: str) -> None:
        address = f"127.0.0.1:{free_port()}"
        process = ServiceProcess(name, {**self._base, "TRAWL_GRPC_ADDRESS": address}, self._logs / f"{name}.log",
                                 module="services.fetcher")
        process.start()
        self.extra[name] = (process, address)
        deadline = time.monotonic() + 60
        while health.check(address) != "SERVING":
            assert process.alive() and time.monotonic() < deadline, f"{name} did not start"
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        self.extra[name][0].kill()

    def stop(self, name: str) -> None:
        assert self.extra[name][0].stop(timeout=60) == 0

    def stop_all(self) -> None:
        for process, _ in self.extra.values():
            process.stop(timeout=60)


def wait_fetched(stack: CrawlStack, count: int, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    with stack.admin() as admin:
        while admin.stats()["fetched"] < count:
            assert time.monotonic() < deadline, f"fewer than {count} pages fetched in {timeout}s"
            time.sleep(0.2)


def required_gap(web: SimWeb, host: str) -> float:
    crawl_delay = web.crawl_delay(host) or 0.0
    return max(MIN_DELAY, min(crawl_delay, CRAWL_DELAY_CAP), FACTOR * web.hosts[host].latency)


@pytest.fixture(scope="module")
def crawl(kafka_bootstrap: str, pg_dsn: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[RequestRecord], SimWeb, set[str]]]:
    logs = tmp_path_factory.mktemp("logs")  # the services' logs and the server's request log, for a failure
    prefix = make_unique_name("rebalance") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, logs, WEB) as (stack, simweb, web):
        expected = {normalize_url(u) for u in web.reachable(web.home_pages())}
        fetchers = Fetchers(stack, logs)
        try:
            stack.start()
            fetchers.start("fetcher.2")  # two fetcher processes
            with stack.admin() as admin:
                admin.add_seeds(web.home_pages())
            wait_fetched(stack, len(expected) * 15 // 100)
            fetchers.start("fetcher.3")  # scale up to three: partitions move to the new one
            wait_fetched(stack, len(expected) * 40 // 100)
            fetchers.kill("fetcher.2")  # a crash: its partitions move once its session times out
            wait_fetched(stack, len(expected) * 65 // 100)
            fetchers.stop("fetcher.3")  # scale down: it settles its partitions before leaving
            stack.wait_until_done(timeout=300)
        finally:
            fetchers.stop_all()
        yield list(simweb.request_log), web, expected


def test_no_host_is_ever_served_twice_at_once(crawl: tuple[list[RequestRecord], SimWeb, set[str]]) -> None:
    log, _web, _expected = crawl
    assert {h: n for h, n in max_concurrency_per_host(log).items() if n > 1} == {}


def test_every_hosts_gap_holds_across_the_moves(crawl: tuple[list[RequestRecord], SimWeb, set[str]]) -> None:
    log, web, _expected = crawl
    too_close = {h: round(g, 3) for h, g in min_gap_per_host(log).items() if g + TOLERANCE < required_gap(web, h)}
    assert too_close == {}
    assert robots_violations(log, web) == []


def test_every_reachable_page_is_fetched(crawl: tuple[list[RequestRecord], SimWeb, set[str]]) -> None:
    log, _web, expected = crawl
    requested = Counter(r.url for r in log if r.path != "/robots.txt")
    assert set(requested) == expected
    # A killed fetcher's uncommitted requests are fetched again (politely); nothing else is.
    assert sum(n - 1 for n in requested.values()) <= 80
