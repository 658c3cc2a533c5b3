"""The broker killed with SIGKILL mid-crawl and started again, empty: the crawl resumes and completes.

The crawl runs on a broker of this module alone (on a free port, in a temporary folder),
since it is killed here. Tansu's memory-only build comes back with no topics, no messages
and no committed offsets, which is the hardest broker restart there is: Apache Kafka
keeps all three. Whatever was on the topics when it died (fetch requests, results,
documents, page links, discovered URLs, cash transfers) is gone.

At a third of the crawl the broker is killed and started again on the same port two
seconds later: the services run under the local stack's supervisor (``supervised``), and
each sees the broker come back without the topics it started with, reports NOT_SERVING,
exits with status 1 and is started again; at start it creates the declared topics and
reads its inputs from the earliest offset. At two thirds it is killed again and kept away
for 15 s, longer than the services' stall limit (8 s here), as when an operator runs
``trawl up`` a while later: the services exit while it is away, and wait for it as they
start again. What was in flight is recovered from the services' durable state
(``docs/architecture.md``, delivery guarantees).

Checked: after each restart the crawl resumes (a page is requested) within 30 s of the
broker answering again, and it completes with every reachable allowed page fetched, no
discovered URL lost, politeness and robots.txt intact from the simulated web's request
log, and the importance service's cash conserved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from libs.localinfra import LocalBroker
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.request_log import RequestRecord
from tests.conftest import broker_of_its_own, make_unique_name
from tests.e2e.crawl_checks import (
    conserved_cash,
    expected_pages,
    lost_urls,
    politeness_faults,
    refetches,
    requested_pages,
)
from tests.e2e.crawl_harness import CrawlStack, crawl_stack
from tests.e2e.fault_injection import (
    BrokerBounce,
    BrokerRestart,
    fetched_count,
    supervised,
    wait_fetched,
    wait_until_quiet,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

WEB = SimWebConfig(
    seed=53, hosts=16, pages=360, host_size_exponent=0.3, hub_host_ratio=0.0,
    crawl_delay_host_ratio=0.1, crawl_delay_values=(0.6,),
)
MIN_DELAY = 0.3
RESUME_WITHIN = 30.0  # seconds from the broker answering again to the next page requested
ENV = {
    "TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY),
    "TRAWL_FETCHER_HANDOFF_DELAY": "1.0",  # covers the largest gap of this web (the Crawl-delay)
    "TRAWL_FETCHER_GAP_MARGIN": "0.02",
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
    "TRAWL_SCHEDULER_UNSENT_CHECK_SECONDS": "5",
    "TRAWL_KAFKA_STALL_SECONDS": "8",
}
LONG_AWAY = 15.0


@dataclass
class BrokerCrawl:
    stack: CrawlStack
    web: SimWeb
    log: list[RequestRecord]
    expected: set[str]
    bounces: list[BrokerBounce]
    exits: dict[str, int]  # per service: times it exited and was started again


@pytest.fixture(scope="module")
def own_broker() -> Iterator[LocalBroker]:
    with broker_of_its_own("trawl-broker-restart-") as broker:
        yield broker


@pytest.fixture(scope="module")
def broker_crawl(own_broker: LocalBroker, pg_dsn: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCrawl]:
    logs = tmp_path_factory.mktemp("logs")
    prefix = make_unique_name("broker_restart") + "."
    restart = BrokerRestart(own_broker)
    with crawl_stack(own_broker.bootstrap, pg_dsn, prefix, logs, WEB) as (stack, simweb, web):
        for process in stack.processes.values():
            process.env.update(ENV)
        expected = expected_pages(web)
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())
        with supervised(list(stack.processes.values())) as supervisor:
            wait_fetched(pg_dsn, len(expected) // 3, timeout=90)
            restart.bounce(pg_dsn, down=2.0)
            wait_fetched(pg_dsn, 2 * len(expected) // 3, timeout=90)
            restart.bounce(pg_dsn, down=LONG_AWAY)
            wait_until_quiet(stack, timeout=150)
            exits = {p.name: p.restarts for p in supervisor.processes}
        print(f"broker bounces: {restart.bounces}; service restarts: {exits}; logs in {logs}")
        yield BrokerCrawl(stack, web, list(simweb.request_log), expected, restart.bounces, exits)


def test_the_restarts_hit_a_running_crawl(broker_crawl: BrokerCrawl) -> None:
    first, second = broker_crawl.bounces
    assert 0 < first.fetched_before < second.fetched_before < len(broker_crawl.expected)
    assert second.back_at - second.killed_at >= LONG_AWAY
    assert all(n >= 1 for n in broker_crawl.exits.values()), broker_crawl.exits  # every service exited


def test_the_crawl_resumes_within_thirty_seconds_of_the_broker_coming_back(broker_crawl: BrokerCrawl) -> None:
    for bounce in broker_crawl.bounces:
        back = bounce.back_at
        after = sorted(r.wall_time for r in broker_crawl.log if r.wall_time >= back and r.path != "/robots.txt")
        assert after, "no page was requested after the broker came back"
        print(f"first page requested {after[0] - back:.1f}s after the broker answered again")
        assert after[0] - back < RESUME_WITHIN


def test_every_reachable_page_is_fetched_and_nothing_is_lost(broker_crawl: BrokerCrawl) -> None:
    assert requested_pages(broker_crawl.log) == broker_crawl.expected
    assert fetched_count(broker_crawl.stack.dsn) == len(broker_crawl.expected)
    assert lost_urls(broker_crawl.stack) == {}
    again = refetches(broker_crawl.log)
    print(f"refetched {again.extra} of {again.pages} pages ({again.share:.2%})")


def test_politeness_holds_through_the_restarts(broker_crawl: BrokerCrawl) -> None:
    assert politeness_faults(broker_crawl.log, broker_crawl.web, MIN_DELAY) == {}


def test_cash_is_conserved_through_the_restarts(broker_crawl: BrokerCrawl) -> None:
    """Cash transfers the broker took are sent again from the senders' outboxes."""
    accounted, total = conserved_cash(broker_crawl.stack)
    assert accounted == pytest.approx(total, rel=1e-9)
