"""A crawl seeded with 300 hosts, with the services' default budgets, on the real broker, database and a
simulated web: every host is contacted within seconds of the seeding, politely (the server's log)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from cli.crawl_report import politeness_check
from libs.simweb import SimWeb, SimWebConfig, build_web
from libs.simweb.process import render_all
from libs.simweb.request_log import RequestRecord
from tests.e2e.crawl_harness import crawl_stack

pytestmark = pytest.mark.e2e

WIDE_WEB = SimWebConfig(seed=5, hosts=300, pages=600, host_size_exponent=0.3, hub_host_ratio=0.0,
                        crawl_delay_host_ratio=0.0, robots_unavailable_ratio=0.0)


@pytest.fixture(scope="module")
def wide_crawl(kafka_bootstrap: str, pg_dsn: str,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[RequestRecord], SimWeb, float]]:
    from tests.conftest import make_unique_name

    # The services' own budgets (the harness's small ones removed), a delay of 1 s as by default.
    # The simulated web's names are allowed through the SSRF guard, as the demo does: looked up here they would
    # each wait for a name server that is not there.
    env: dict[str, str | None] = {"TRAWL_FETCHER_MIN_DELAY": "1.0", "TRAWL_FETCHER_CONCURRENCY": None,
                                  "TRAWL_SCHEDULER_MAX_IN_FLIGHT": None, "TRAWL_FETCHER_SSRF_ALLOW": "*.test",
                                  "TRAWL_FETCHER_SSRF_PROXY_UNRESOLVED": "false"}
    web = render_all(build_web(WIDE_WEB))  # a server rendering pages as asked would be what holds hosts back
    prefix = make_unique_name("e2e-wide") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, tmp_path_factory.mktemp("logs"), web, env) as (stack, simweb,
                                                                                                        _web):
        stack.start()
        seeds = web.home_pages()
        assert len({s.split("/")[2] for s in seeds}) == 300
        seeded_at = time.monotonic()
        with stack.admin() as admin:
            assert admin.add_seeds(seeds)["accepted"] == len(seeds)
        deadline = seeded_at + 60
        while len({r.host for r in simweb.request_log if r.path != "/robots.txt"}) < 300:
            log = simweb.request_log
            assert time.monotonic() < deadline, (
                f"300 seeded hosts not all fetched from within 60 s: {len({r.host for r in log})} contacted,"
                f" pages of {len({r.host for r in log if r.path != '/robots.txt'})}, statuses"
                f" {sorted({(r.path, r.status) for r in log if r.path == '/robots.txt' or r.status != 200})[:20]}")
            time.sleep(0.25)
        yield list(simweb.request_log), web, seeded_at


def test_a_crawl_seeded_with_300_hosts_contacts_every_one_within_seconds(
    wide_crawl: tuple[list[RequestRecord], SimWeb, float],
) -> None:
    log, _web, seeded_at = wide_crawl
    first: dict[str, float] = {}
    for record in sorted(log, key=lambda r: r.started_at):
        first.setdefault(record.host, record.started_at)
    assert len(first) == 300
    # From the seeding: the fetcher's first assignment, then every host at once (no in-flight budget of a
    # few dozen hosts, no partition held as if a dead fetcher had just fetched from it).
    assert max(first.values()) - seeded_at < 10.0
    assert max(first.values()) - min(first.values()) < 3.0
    home_pages = {r.host: r.started_at for r in sorted(log, key=lambda r: -r.started_at) if r.path == "/"}
    assert len(home_pages) == 300 and max(home_pages.values()) - min(first.values()) < 5.0


def test_the_wide_crawl_is_polite(wide_crawl: tuple[list[RequestRecord], SimWeb, float]) -> None:
    log, web, _seeded_at = wide_crawl
    verdict = politeness_check(log, web, 1.0)
    assert verdict["robots_violations"] == []
    assert verdict["hosts_with_two_in_flight"] == []
    assert verdict["hosts_with_gap_below_delay"] == {}
