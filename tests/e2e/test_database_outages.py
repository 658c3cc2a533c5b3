"""PostgreSQL restarted mid-crawl, and later away for 30 s: the services wait, reconnect and lose nothing.

The crawl runs on a PostgreSQL server of this module alone (on a free port, in a
temporary folder), never the session's shared one, since it is stopped here.

1. At a quarter of the crawl the server is restarted as after a crash
   (``immediate``: every session is cut, the server recovers its WAL and comes
   back at once).
2. Once the crawl has made progress again, at about half of it, the server is
   stopped for 30 s and started again. Stopping the server, rather than a
   loopback proxy that refuses connections, is the outage an operator actually
   meets (a failover, a maintenance restart, an OOM kill): the sessions the
   pools hold break *and* every new connection is refused for the whole time.
   A proxy that only refused new connections would leave the pooled sessions
   working and test less; one that also cut them would be this outage with
   extra parts.

Through both, every service process must stay up (a dependency outage is
retried, never fatal, never dead-lettered), the crawl must go on after each
outage and complete with every reachable allowed page fetched, no discovered URL
lost, politeness intact and cash conserved.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from libs.localinfra import LocalPostgres, free_port
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_checks import (
    conserved_cash,
    expected_pages,
    lost_urls,
    politeness_faults,
    refetches,
    requested_pages,
)
from tests.e2e.crawl_harness import CrawlStack, crawl_stack
from tests.e2e.fault_injection import Outage, PostgresOutage, fetched_count, wait_fetched, wait_until_quiet

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

WEB = SimWebConfig(
    seed=41, hosts=24, pages=700, host_size_exponent=0.3, hub_host_ratio=0.0,
    crawl_delay_host_ratio=0.1, crawl_delay_values=(0.8,),
)
MIN_DELAY = 0.5
REFUSAL_SECONDS = 30.0
ENV = {"TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY)}


@dataclass
class OutageCrawl:
    stack: CrawlStack
    web: SimWeb
    log: list[RequestRecord]
    expected: set[str]
    restart: Outage
    refusal: Outage
    fetched_after_restart: int  # pages fetched once the crawl went on after the restart
    dead_letters: dict[str, int]  # per service: dead-lettered messages in its log


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[LocalPostgres]:
    root = Path(tempfile.mkdtemp(prefix="trawl-outage-"))
    root.chmod(0o755)  # the server's own user must reach the data folder
    # Durable (fsync and synchronous commit on), as a production server: the restart is a crash, and the
    # session servers' fast mode would lose the last commits in it, which no service can make up for.
    server = LocalPostgres(root / "pgdata", free_port(), fast=False)
    try:
        server.ensure_started()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def outage_crawl(
    kafka_bootstrap: str, own_postgres: LocalPostgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OutageCrawl]:
    logs = tmp_path_factory.mktemp("logs")
    prefix = make_unique_name("pg_outage") + "."
    dsn = own_postgres.dsn()
    outages = PostgresOutage(own_postgres)
    with crawl_stack(kafka_bootstrap, dsn, prefix, logs, WEB) as (stack, simweb, web):
        for process in stack.processes.values():
            process.env.update(ENV)
        expected = expected_pages(web)
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())

        def all_alive() -> None:
            for name, process in stack.processes.items():
                assert process.alive(), f"{name} exited: see {process.log_path}"

        wait_fetched(dsn, len(expected) // 4, alive=all_alive)
        restart = outages.restart(dsn)
        all_alive()
        after_restart = restart.fetched_before + 20
        wait_fetched(dsn, max(after_restart, len(expected) // 2), alive=all_alive)
        fetched_after_restart = fetched_count(dsn)
        refusal = outages.refuse(dsn, REFUSAL_SECONDS)
        all_alive()
        wait_until_quiet(stack, timeout=300, alive=all_alive)
        print(f"outages: {outages.outages}")
        dead = {name: Path(p.log_path).read_text().count("dead-lettered") for name, p in stack.processes.items()}
        yield OutageCrawl(stack, web, list(simweb.request_log), expected, restart, refusal,
                          fetched_after_restart, dead)


def test_the_outages_hit_a_running_crawl(outage_crawl: OutageCrawl) -> None:
    expected = len(outage_crawl.expected)
    assert 0 < outage_crawl.restart.fetched_before < outage_crawl.fetched_after_restart
    assert outage_crawl.fetched_after_restart <= outage_crawl.refusal.fetched_before < expected
    assert outage_crawl.refusal.away >= REFUSAL_SECONDS


def test_services_reconnect_after_a_restart(outage_crawl: OutageCrawl) -> None:
    """Progress after the restart: pages fetched beyond those fetched before it (the crawl later completes)."""
    assert outage_crawl.fetched_after_restart >= outage_crawl.restart.fetched_before + 20


def test_services_wait_out_thirty_seconds_of_refused_connections(outage_crawl: OutageCrawl) -> None:
    assert fetched_count(outage_crawl.stack.dsn) == len(outage_crawl.expected)
    assert outage_crawl.dead_letters == {name: 0 for name in outage_crawl.stack.processes}


def test_nothing_is_lost_through_the_outages(outage_crawl: OutageCrawl) -> None:
    assert requested_pages(outage_crawl.log) == outage_crawl.expected
    assert lost_urls(outage_crawl.stack) == {}
    again = refetches(outage_crawl.log)
    print(f"refetched {again.extra} of {again.pages} pages ({again.share:.2%}): {again.urls}")
    assert again.share < 0.01
    assert politeness_faults(outage_crawl.log, outage_crawl.web, MIN_DELAY) == {}
    accounted, total = conserved_cash(outage_crawl.stack)
    assert accounted == pytest.approx(total, rel=1e-9)
