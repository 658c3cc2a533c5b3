"""PageRank ground truth: the power iteration itself, and over the simulated graph."""

from __future__ import annotations

import pytest

from libs.simweb import SimWebConfig, build_web
from libs.simweb.pagerank import pagerank


def test_symmetric_cycle_is_uniform() -> None:
    ranks = pagerank({"a": ["b"], "b": ["c"], "c": ["a"]})
    assert ranks == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_known_values_with_a_dangling_node() -> None:
    # a -> b, a -> c, b -> c, c dangling. Solved by hand: with d = 0.85 and n = 3,
    # r_a = (1-d)/n + d*r_c/n; r_b = r_a' + d*r_a/2; r_c = r_a' + d*r_a/2 + d*r_b.
    ranks = pagerank({"a": ["b", "c"], "b": ["c"], "c": []}, damping=0.85)
    d = 0.85
    r_c = ranks["c"]
    r_a = (1 - d) / 3 + d * r_c / 3
    r_b = r_a + d * r_a / 2
    assert ranks["a"] == pytest.approx(r_a)
    assert ranks["b"] == pytest.approx(r_b)
    assert r_c == pytest.approx(r_a + d * r_a / 2 + d * r_b)
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert ranks["c"] > ranks["b"] > ranks["a"]


def test_duplicate_and_unknown_targets_are_ignored() -> None:
    assert pagerank({"a": ["b", "b", "zzz"], "b": ["a"]}) == pytest.approx({"a": 0.5, "b": 0.5})


def test_simulated_web_pagerank_sums_to_one_and_favours_hubs() -> None:
    web = build_web(SimWebConfig(seed=2, hosts=30, pages=1000))
    ranks = web.pagerank()
    assert set(ranks) == set(web.pages_at())
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-9)
    assert min(ranks.values()) > 0
    top = max(ranks, key=ranks.__getitem__)
    menu_targets = {link.target_url for p in web.pages.values()
                    for link in p.links if link.placement == "nav"}
    assert top in menu_targets  # a home page or a featured page, linked from every page of its host
    assert ranks[top] > 10 / len(ranks)
    assert web.pagerank(damping=0.5) != ranks
