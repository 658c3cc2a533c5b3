"""The whole crawl loop on the real broker, database and a simulated web: correct, polite, ordered."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from cli.crawl_report import politeness_check
from libs.common.urls import normalize_url
from libs.simweb import SimWeb
from services.importance.cash_store import CONSERVATION_SQL
from tests.e2e.crawl_harness import FAST_POLITENESS, CrawlStack, crawl_stack

pytestmark = pytest.mark.e2e
MIN_DELAY = float(FAST_POLITENESS["TRAWL_FETCHER_MIN_DELAY"])


@pytest.fixture(scope="module")
def crawled(
    kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[CrawlStack, list[object], SimWeb]]:
    from tests.conftest import make_unique_name

    prefix = make_unique_name("e2e") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, tmp_path_factory.mktemp("logs")) as (stack, simweb, web):
        stack.start()
        with stack.admin() as admin:
            reply = admin.add_seeds(web.home_pages())
        assert reply["accepted"] == len(web.home_pages())
        stack.wait_until_done()
        yield stack, list(simweb.request_log), web


def page_requests(log: list[object]) -> Counter[str]:
    return Counter(r.url for r in log if r.path != "/robots.txt")  # type: ignore[attr-defined]


def test_every_reachable_allowed_page_is_fetched_exactly_once(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    stack, log, web = crawled
    expected = {normalize_url(u) for u in web.reachable(web.home_pages())}
    requested = page_requests(log)
    assert set(requested) == expected
    assert [u for u, n in requested.items() if n > 1] == []
    fetched = {r[0] for r in stack.query("SELECT url FROM scheduler.frontier WHERE status = 'fetched'")}
    assert fetched == expected


def test_robots_and_politeness_hold_from_the_servers_side(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    _stack, log, web = crawled
    verdict = politeness_check(log, web, MIN_DELAY)  # type: ignore[arg-type]
    assert verdict["robots_violations"] == []
    assert verdict["hosts_with_two_in_flight"] == []
    assert verdict["hosts_with_gap_below_delay"] == {}
    blocked = {r[0] for r in _stack.query("SELECT url FROM scheduler.frontier WHERE status = 'blocked'")}
    assert blocked and all(not web.allowed(u) for u in blocked)


def test_link_graph_in_postgres_equals_the_simulated_graph(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    stack, _log, web = crawled
    stored: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)
    for source, target, anchor, link_class in stack.query(
        "SELECT s.url, t.url, l.anchor, l.link_class FROM linkbase.links l"
        " JOIN linkbase.urls s ON s.url_fp = l.source_fp JOIN linkbase.urls t ON t.url_fp = l.target_fp"
    ):
        stored[source][target] = (anchor, link_class)
    bad: dict[str, set[str]] = defaultdict(set)
    for source, href in stack.query(
        "SELECT s.url, b.href FROM linkbase.bad_links b JOIN linkbase.urls s ON s.url_fp = b.source_fp"
    ):
        bad[source].add(href)
    fetched = [r[0] for r in stack.query("SELECT url FROM scheduler.frontier WHERE status = 'fetched'")]
    classes = {"internal": 1, "external": 2}
    checked = 0
    for url in fetched:
        expected: dict[str, tuple[str, int]] = {}
        expected_bad: set[str] = set()
        for link in web.links_at(url):
            if link.kind == "bad":
                expected_bad.add(link.target_url)
                continue
            target = normalize_url(link.target_url)
            expected.setdefault(target, (link.anchor, classes[link.kind]))
        assert stored.get(url, {}) == expected, url
        assert len(bad.get(url, set())) == len(expected_bad), url
        checked += 1
    assert checked == len(fetched) > 100


REORDER_WINDOW = 5.0
"""Seconds apart within which two copies' documents may reach dedup in the other order than their fetches
(they go through the extractor's batches on different partitions): dedup's first copy is the first it records."""


def test_exact_duplicates_point_at_the_first_copy(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    stack, _log, web = crawled
    rows = stack.query(
        "SELECT f.url, extract(epoch FROM f.fetched_at)::float8, u.duplicate_of FROM scheduler.frontier f"
        " JOIN linkbase.urls u ON u.url_fp = f.url_fp WHERE f.status = 'fetched'"
    )
    fetched = {url: at for url, at, _ in rows}
    verdict = {url: dup for url, _, dup in rows}
    groups: dict[str, list[str]] = defaultdict(list)
    for url, page in web.pages.items():
        if url in fetched:
            groups[page.duplicate_of or url].append(url)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    assert groups, "the simulated web has exact duplicates"
    firsts = set()
    for members in groups.values():
        unique = [u for u in members if verdict[u] is None]
        assert len(unique) == 1, members  # one copy owns the content
        first = unique[0]
        assert all(verdict[u] == first for u in members if u != first)
        assert fetched[first] <= min(fetched[u] for u in members) + REORDER_WINDOW, members
        firsts.add(first)
    marked = {u for u, d in verdict.items() if d is not None}
    assert marked == {u for members in groups.values() for u in members} - firsts


def test_important_pages_are_fetched_earlier_than_a_random_order_would(
    crawled: tuple[CrawlStack, list[object], SimWeb],
) -> None:
    stack, _log, web = crawled
    truth = {normalize_url(u): r for u, r in web.pagerank().items()}
    rows = [(url, s) for url, s in stack.query(
        "SELECT url, fetch_seq FROM scheduler.frontier WHERE status = 'fetched'") if url in truth]
    order = [-s for _, s in rows]
    ranks = [truth[u] for u, _ in rows]
    rho = spearmanr(order, ranks).statistic
    rng = random.Random(5)
    shuffled: Callable[[], float] = lambda: spearmanr(rng.sample(order, len(order)), ranks).statistic  # noqa: E731
    random_best = max(shuffled() for _ in range(50))
    assert rho > 0.3
    assert rho > random_best + 0.15


def test_cash_is_conserved(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    stack, _log, _web = crawled
    ((accounted, total),) = stack.query(CONSERVATION_SQL)
    assert accounted == pytest.approx(total, rel=1e-9)


def test_dead_letters_stay_empty_on_a_clean_crawl(crawled: tuple[CrawlStack, list[object], SimWeb]) -> None:
    stack, _log, _web = crawled
    for name, process in stack.processes.items():
        text = Path(process.log_path).read_text()
        assert "dead-lettered" not in text, name
        assert process.alive(), name
