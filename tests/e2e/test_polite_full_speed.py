"""Politeness at full speed, on the real broker, database and a simulated web.

Judged from the simulated web's own request log: three hosts of one fetch-requests
partition: one with a long robots.txt Crawl-delay, one whose every answer (robots.txt
first) hangs past the fetcher's timeout, and a quick one. Only two requests may be on the
wire at once and three of each host are handed out, so a request waiting for its host's
gap that held a place on the wire would stop the quick host for the slow host's whole
Crawl-delay. The quick host must be fetched at its own pace.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Iterator

import pytest

from cli.crawl_report import politeness_check
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import FETCH_REQUESTS
from libs.simweb import SimWeb
from libs.simweb.request_log import RequestRecord
from tests.e2e.crawl_harness import crawl_stack
from tests.e2e.handmade_web import handmade_web, tree_site

pytestmark = pytest.mark.e2e

MIN_DELAY = 0.05
SLOW_CRAWL_DELAY = 2.0
FETCH_TIMEOUT = 2.0


def _same_partition_hosts() -> tuple[str, str, str]:
    """A slow, a hanging and a quick host whose requests share one fetch-requests partition."""
    slow = "slow.test"
    wanted = partition_for(slow, FETCH_REQUESTS.partitions)
    names = [n for n in (f"h{i}.test" for i in range(10_000)) if partition_for(n, FETCH_REQUESTS.partitions) == wanted]
    return slow, names[0], names[1]


SLOW, HANG, QUICK = _same_partition_hosts()
QUICK_PAGES = 30


def _log_of(simweb_log: list[RequestRecord], host: str) -> list[RequestRecord]:
    return sorted((r for r in simweb_log if r.host == host), key=lambda r: r.started_at)


def _gaps(records: list[RequestRecord]) -> list[float]:
    return [b.started_at - a.finished_at for a, b in itertools.pairwise(records)]


@pytest.fixture(scope="module")
def partition_crawl(kafka_bootstrap: str, pg_dsn: str,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[RequestRecord], SimWeb]]:
    from tests.conftest import make_unique_name

    web = handmade_web(
        {QUICK: tree_site(QUICK, QUICK_PAGES, 3), SLOW: tree_site(SLOW, 8, 3), HANG: tree_site(HANG, 3, 2)},
        crawl_delays={SLOW: SLOW_CRAWL_DELAY},
        latencies={HANG: 30.0},
    )
    env: dict[str, str | None] = {
        "TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY),
        "TRAWL_FETCHER_CONCURRENCY": "2",  # on the wire: the hanging host takes one of the two at times
        "TRAWL_FETCHER_TOTAL_TIMEOUT": str(FETCH_TIMEOUT),
        "TRAWL_FETCHER_CONNECT_TIMEOUT": str(FETCH_TIMEOUT),
        "TRAWL_SCHEDULER_HOST_QUEUE_DEPTH": "3",
    }
    prefix = make_unique_name("e2e-speed") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, tmp_path_factory.mktemp("logs"), web, env) as (stack, simweb,
                                                                                                        _web):
        stack.start()
        every_page = sorted(web.pages)  # all at once: no host waits for its pages to be discovered
        with stack.admin() as admin:
            assert admin.add_seeds(every_page)["accepted"] == len(every_page)
        deadline = time.monotonic() + 120
        while True:
            log = list(simweb.request_log)
            quick_done = sum(1 for r in log if r.host == QUICK and r.path != "/robots.txt") >= QUICK_PAGES
            slow_done = sum(1 for r in log if r.host == SLOW and r.path != "/robots.txt") >= 8
            if quick_done and slow_done:
                break
            assert time.monotonic() < deadline, "the quick and the slow host were not crawled within 120 s"
            time.sleep(0.5)
        yield log, web


def test_the_hosts_share_a_partition() -> None:
    assert len({partition_for(h, FETCH_REQUESTS.partitions) for h in (SLOW, HANG, QUICK)}) == 1


def test_a_quick_host_is_not_held_by_a_slow_or_hanging_host_of_its_partition(
    partition_crawl: tuple[list[RequestRecord], SimWeb],
) -> None:
    log, _web = partition_crawl
    quick, slow = _log_of(log, QUICK), _log_of(log, SLOW)
    assert len([r for r in quick if r.path != "/robots.txt"]) == QUICK_PAGES
    # The quick host finished long before the slow one could (seven Crawl-delays of 2 s after its first page)
    assert quick[-1].finished_at < slow[-1].started_at - 3 * SLOW_CRAWL_DELAY
    gaps = _gaps(quick)
    # Each request started soon after its gap: never a slow host's Crawl-delay or a hanging host's timeout later.
    assert statistics.median(gaps) < MIN_DELAY + 0.25, gaps
    assert max(gaps) < min(SLOW_CRAWL_DELAY, FETCH_TIMEOUT) - 0.5, gaps


def test_politeness_holds_for_all_three(partition_crawl: tuple[list[RequestRecord], SimWeb]) -> None:
    log, web = partition_crawl
    verdict = politeness_check(log, web, MIN_DELAY)
    assert verdict["robots_violations"] == []
    assert verdict["hosts_with_two_in_flight"] == []
    assert verdict["hosts_with_gap_below_delay"] == {}
    assert min(_gaps(_log_of(log, SLOW))) >= SLOW_CRAWL_DELAY
