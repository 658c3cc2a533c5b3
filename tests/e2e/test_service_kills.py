"""Every service killed with SIGKILL, again and again, during a crawl: nothing is lost, nothing is impolite.

Once a tenth of the web is fetched, each of the six services is killed five
times, each time 2 to 10 s (at random) after its process serves again, so that
every incarnation works before it dies (a seeded random.Random per service; the
delays are drawn up front and written, with every kill, to ``chaos.log`` beside
the services' logs), and started again after a random pause. Kills of different
services overlap. A restart costs a service about ten seconds on a loaded
machine, so the crawl moves slowly while the kills go on, and the web (a thousand
pages over thirty hosts, at least 0.4 s between two requests to a host) is still
far from crawled at the last kill; the test checks it.

Then the crawl must complete with every reachable allowed page fetched, every
discovered URL fetched or ended with a recorded outcome, few pages requested
twice (what redelivery after a kill costs), politeness and robots.txt intact from
the server's side, and the importance service's cash conserved.

Refetches: a fetcher killed with SIGKILL loses the fetches it has in hand (up to
one per busy host) and those whose outcome the broker had not yet acknowledged;
their requests are delivered again, so they are fetched twice. On this web of a
thousand pages, five fetcher kills cost 0 to 4.9% of pages (eleven runs), almost
all of them requested within 0.25 s of a kill. The bound checked here, 6%, catches
a regression such as lost commits (which refetch whole partitions). What a kill
costs does not grow with the crawl, so the share falls as the crawl grows: with
``TRAWL_KILL_TEST_PAGES`` of 5,000 or more (the same thirty hosts, each with more
pages; the crawl then takes minutes) the test checks the target of under 1%::

    TRAWL_KILL_TEST_PAGES=8000 .venv/bin/python -m pytest -p no:cacheprovider tests/e2e/test_service_kills.py

(measured: 21 of 7,559 pages requested twice, 0.28%, every test passing, in 9.5
minutes at a load of 4 to 7 on 2 cores; the crawl itself goes at the pace of the
slowest hosts, whose adaptive gap is ten times their 0.3 s answers).

The server's request log is written to ``requests.jsonl`` beside the chaos log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_checks import (
    conserved_cash,
    expected_pages,
    frontier_statuses,
    lease_expiries,
    lost_urls,
    politeness_faults,
    refetches,
    requested_pages,
)
from tests.e2e.crawl_harness import CrawlStack, crawl_stack
from tests.e2e.fault_injection import Kill, ServiceChaos, wait_fetched, wait_serving, wait_until_quiet

PAGES = int(os.environ.get("TRAWL_KILL_TEST_PAGES", "1000"))
LARGE_WEB = 5000  # from this size on, the target of under 1% refetched is checked
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600 + PAGES // 4)]
log = logging.getLogger(__name__)

SEED = 20261122
KILLS_PER_SERVICE = 5
WEB = SimWebConfig(
    seed=31, hosts=30, pages=PAGES, host_size_exponent=0.3, hub_host_ratio=0.0,
    crawl_delay_host_ratio=0.1, crawl_delay_values=(0.8,),
    latency_range=(0.02, 0.3),  # hosts answer at different speeds, so their fetches do not all fall together
)
MIN_DELAY = 0.4
REFETCH_BOUND = 0.01 if PAGES >= LARGE_WEB else 0.06  # share of pages; see the module's docstring
ENV = {
    "TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY),
    "TRAWL_FETCHER_HANDOFF_DELAY": "1.0",  # covers the largest gap of this web (the Crawl-delay)
    # The server times a response's end when its process gets to it, after the bytes left: at this test's
    # load (4 to 7 on two cores) its log once showed 0.3925 s before a request that had waited at the
    # fetcher for the gap. The margin keeps the gap the server measures at least the delay.
    "TRAWL_FETCHER_GAP_MARGIN": "0.02",
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
}


@dataclass
class ChaosCrawl:
    stack: CrawlStack
    web: SimWeb
    log: list[RequestRecord]
    kills: list[Kill]
    expected: set[str]


@pytest.fixture(scope="module")
def chaos_crawl(kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChaosCrawl]:
    logs = tmp_path_factory.mktemp("logs")
    prefix = make_unique_name("kills") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, logs, WEB) as (stack, simweb, web):
        for process in stack.processes.values():
            process.env.update(ENV)
        expected = expected_pages(web)
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())
        wait_fetched(stack.dsn, len(expected) // 10)  # kills land in a crawl in full swing
        addresses = {name: f"127.0.0.1:{port}" for name, port in stack.ports.items()}
        chaos = ServiceChaos(stack.processes, addresses, stack.dsn, seed=SEED, kills=KILLS_PER_SERVICE,
                             uptime=(2.0, 10.0), down=(0.1, 2.0), journal=logs / "chaos.log")
        kills = chaos.run()
        print(f"chaos schedule (seed {SEED}): {logs / 'chaos.log'}")
        print((logs / "chaos.log").read_text())

        def all_alive() -> None:
            for name, process in stack.processes.items():
                assert process.alive(), f"{name} exited: see {process.log_path}"

        waited = wait_until_quiet(stack, timeout=300 + PAGES // 5, alive=all_alive)
        print(f"quiet {waited:.1f}s after the last restart")
        for name, process in stack.processes.items():
            wait_serving(addresses[name], process, 10)
        requests = list(simweb.request_log)
        (logs / "requests.jsonl").write_text("".join(r.to_json() + "\n" for r in requests))
        yield ChaosCrawl(stack, web, requests, kills, expected)


def test_each_service_was_killed_five_times_mid_crawl(chaos_crawl: ChaosCrawl) -> None:
    per_service = {name: sum(k.service == name for k in chaos_crawl.kills) for name in chaos_crawl.stack.processes}
    assert per_service == {name: KILLS_PER_SERVICE for name in chaos_crawl.stack.processes}
    assert len({k.pid for k in chaos_crawl.kills}) == len(chaos_crawl.kills), "each kill hit a new process"
    last = max(chaos_crawl.kills, key=lambda k: k.at)
    assert 0 <= last.fetched < len(chaos_crawl.expected), "the crawl was still running at the last kill"


def test_every_reachable_allowed_page_is_fetched(chaos_crawl: ChaosCrawl) -> None:
    assert requested_pages(chaos_crawl.log) == chaos_crawl.expected
    fetched = {r[0] for r in chaos_crawl.stack.query("SELECT url FROM scheduler.frontier WHERE status = 'fetched'")}
    assert fetched == chaos_crawl.expected


def test_no_discovered_url_is_lost(chaos_crawl: ChaosCrawl) -> None:
    print("frontier:", frontier_statuses(chaos_crawl.stack))
    assert lost_urls(chaos_crawl.stack) == {}


def test_refetches_from_redelivery_stay_within_what_the_kills_had_in_hand(chaos_crawl: ChaosCrawl) -> None:
    again = refetches(chaos_crawl.log)
    print(f"refetched {again.extra} of {again.pages} pages ({again.share:.2%}): {again.urls};"
          f" {lease_expiries(chaos_crawl.stack)} requests queued again after the lease")
    assert again.share < REFETCH_BOUND


def test_politeness_and_robots_hold_through_the_kills(chaos_crawl: ChaosCrawl) -> None:
    assert politeness_faults(chaos_crawl.log, chaos_crawl.web, MIN_DELAY) == {}


def test_cash_is_conserved_through_the_kills(chaos_crawl: ChaosCrawl) -> None:
    accounted, total = conserved_cash(chaos_crawl.stack)
    assert accounted == pytest.approx(total, rel=1e-9)
