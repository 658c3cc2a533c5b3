"""The politeness bound and gap violations, on hand-made logs with known answers."""

from __future__ import annotations

import pytest

from libs.simweb.politeness_bound import (
    GapViolations,
    HostBound,
    crawl_seconds,
    gap_violations,
    host_bounds,
    politeness_bound,
    seconds_to_share,
)
from libs.simweb.request_log import RequestRecord
from libs.simweb.site_tree import SiteGroup, TreeWebConfig, build_tree_web


def rec(host: str, start: float, end: float, path: str = "/") -> RequestRecord:
    return RequestRecord(start, end, 1_700_000_000 + start, host, path, 200, "trawl")


def perfect_log() -> list[RequestRecord]:
    """A polite crawler that never waits longer than it must: a.test (delay 1 s, 3 pages), b.test
    (Crawl-delay 2 s, 1 page), both answering in 0.1 s."""
    return [
        rec("a.test", 0.0, 0.1, "/robots.txt"), rec("a.test", 1.1, 1.2), rec("a.test", 2.2, 2.3, "/s/"),
        rec("a.test", 3.3, 3.4, "/s/x.html"),
        rec("b.test", 0.0, 0.1, "/robots.txt"), rec("b.test", 2.1, 2.2),
    ]


def test_a_perfect_crawl_takes_exactly_the_bound() -> None:
    bounds = [HostBound("a.test", 3, 1.0, 0.1, depth=2), HostBound("b.test", 1, 2.0, 0.1)]
    assert bounds[0].seconds == pytest.approx(3.4)  # robots.txt, then 3 x (gap + answer)
    assert bounds[1].seconds == pytest.approx(2.2)
    assert politeness_bound(bounds).host == "a.test"
    assert crawl_seconds(perfect_log()) == pytest.approx(politeness_bound(bounds).seconds)
    assert gap_violations(perfect_log(), {"a.test": 1.0, "b.test": 2.0}) == GapViolations(0, 0, 0)


def test_the_time_to_a_share_of_the_pages_counts_answered_pages_only() -> None:
    log = perfect_log()  # pages answered at 1.2, 2.2, 2.3 and 3.4 s
    log.append(RequestRecord(2.5, 2.6, 1_700_000_002.5, "b.test", "/gone", 404, "trawl"))
    assert seconds_to_share(log, (0.25, 0.5, 0.75, 1.0)) == pytest.approx(
        {0.25: 1.2, 0.5: 2.2, 0.75: 2.3, 1.0: 3.4})
    assert seconds_to_share([], (0.5,)) == {}
    assert seconds_to_share(log[:1], (0.5,)) == {}  # robots.txt alone: no page yet


def test_depth_binds_when_a_host_has_fewer_pages_than_levels() -> None:
    assert HostBound("a.test", 2, 1.0, 0.0, depth=4).seconds == pytest.approx(5.0)
    assert HostBound("a.test", 0, 1.0, 0.25).seconds == pytest.approx(0.25)  # robots.txt alone


def test_gaps_are_counted_end_to_start_and_start_to_start() -> None:
    log = perfect_log()
    log[2] = rec("a.test", 2.15, 2.3, "/s/")  # 0.95 s after the end before it, 1.05 after its start
    counts = gap_violations(log, {"a.test": 1.0, "b.test": 2.0})
    assert (counts.overlaps, counts.end_to_start, counts.start_to_start) == (0, 1, 0)
    log.append(rec("a.test", 3.35, 3.5, "/s/y.html"))  # starts before the one before it ends
    counts = gap_violations(log, {"a.test": 1.0, "b.test": 2.0})
    assert (counts.overlaps, counts.end_to_start, counts.start_to_start) == (1, 2, 1)
    # b.test's Crawl-delay of 2 s was kept; judged by the crawler's 1 s delay alone it still is.
    assert gap_violations(perfect_log(), {"a.test": 1.0}, default_gap=3.0).end_to_start == 1


def test_start_to_start_gaps_allow_for_the_way_to_the_server() -> None:
    log = [rec("a.test", 0.0, 0.01, "/robots.txt"), rec("a.test", 0.97, 0.98), rec("a.test", 1.90, 1.91, "/x")]
    counts = gap_violations(log, {"a.test": 1.0})
    assert (counts.end_to_start, counts.start_to_start) == (2, 1)  # 0.97 s passes, 0.93 s does not


def test_host_bounds_of_a_web_take_crawl_delays_and_disallowed_hosts() -> None:
    config = TreeWebConfig("t", (SiteGroup("s", 10, (8, 8), 1),), seed=4, crawl_delay_share=0.2,
                           crawl_delay_values=(2.0,), disallow_share=0.1, latency_range=(0.05, 0.05))
    web = build_tree_web(config)
    reachable = web.reachable(web.home_pages())
    bounds = host_bounds(web, reachable, 0.5, web.levels)
    by_kind = {spec.robots: bounds[name] for name, spec in web.hosts.items()}
    assert by_kind["crawl_delay"].gap == 2.0 and by_kind["allow_all"].gap == 0.5
    assert by_kind["disallow_all"].pages == 0 and by_kind["disallow_all"].seconds == pytest.approx(0.05)
    assert by_kind["allow_all"].pages == 8 and by_kind["allow_all"].depth == 2
    assert by_kind["allow_all"].seconds == pytest.approx(8 * 0.5 + 9 * 0.05)
    assert politeness_bound(bounds.values()).seconds == pytest.approx(8 * 2.0 + 9 * 0.05)
