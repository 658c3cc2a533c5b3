"""PageRank captured by a crawl's first pages, against the best order."""

from __future__ import annotations

import pytest

from libs.simweb.crawl_order import fetch_order, pagerank_captured, reachable_pagerank
from libs.simweb.request_log import RequestRecord
from libs.simweb.site_tree import SiteGroup, TreeWebConfig, build_tree_web

SCORES = {"c": 0.2, "a": 0.4, "d": 0.1, "b": 0.3}  # not in rank order


def test_best_order_captures_everything_and_worst_little() -> None:
    assert pagerank_captured(["a", "b", "c", "d"], SCORES, (0.25, 0.5, 1.0)) == pytest.approx(
        {0.25: 1.0, 0.5: 1.0, 1.0: 1.0})
    worst = pagerank_captured(["d", "c", "b", "a"], SCORES, (0.25, 0.5, 1.0))
    assert worst == pytest.approx({0.25: 0.1 / 0.4, 0.5: 0.3 / 0.7, 1.0: 1.0})


def test_pages_not_fetched_or_unknown_count_nothing() -> None:
    assert pagerank_captured(["a"], SCORES, (0.5,)) == pytest.approx({0.5: 0.4 / 0.7})
    assert pagerank_captured(["zzz", "a"], SCORES, (0.5,)) == pytest.approx({0.5: 0.4 / 0.7})
    assert pagerank_captured([], SCORES, (0.1,)) == {0.1: 0.0}


def test_fetch_order_is_pages_by_request_start_each_once() -> None:
    def rec(start: float, path: str, status: int = 200) -> RequestRecord:
        return RequestRecord(start, start + 0.1, start, "a.test", path, status, "trawl")

    log = [rec(3.0, "/x"), rec(0.0, "/robots.txt"), rec(1.0, "/"), rec(2.0, "/gone", 404), rec(4.0, "/"),
           rec(2.5, "/y?p=2")]
    assert fetch_order(log) == ["http://a.test/", "http://a.test/y?p=2", "http://a.test/x"]


def test_home_and_section_pages_outrank_articles() -> None:
    web = build_tree_web(TreeWebConfig("t", (SiteGroup("s", 4, (30, 30), 1),), seed=8, disallow_share=0.25))
    reachable = web.reachable(web.home_pages())
    ranks = reachable_pagerank(web, reachable)
    assert set(ranks) == reachable and sum(ranks.values()) == pytest.approx(1.0)
    by_level: dict[int, list[float]] = {}
    for url, rank in ranks.items():
        by_level.setdefault(web.levels[url], []).append(rank)
    means = [sum(v) / len(v) for _, v in sorted(by_level.items())]
    assert means == sorted(means, reverse=True)
    order = sorted(reachable, key=lambda u: (web.levels[u], u))  # breadth first
    assert pagerank_captured(order, ranks)[0.1] > pagerank_captured(order[::-1], ranks)[0.1]
