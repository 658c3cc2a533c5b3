"""The evaluator's what-if of one virtual page over the partitions: same dividends everywhere, cash conserved."""

from __future__ import annotations

import math

import pytest

from cli.eval.ordering import evaluate
from cli.eval.ordering_crawl import ImportanceCrawl, importance_order
from cli.eval.ordering_graph import generate
from cli.eval.shared_virtual import MODES, PooledEngine, SharedVirtualPage
from services.importance.settings import ImportanceSettings


def _crawl(mode: str, partitions: int, pages: int = 2000, seed: int = 3, steps: int = 200) -> ImportanceCrawl:
    graph, _ = generate(pages, seed, 5)
    crawl = ImportanceCrawl(graph, ImportanceSettings().opic_config(partitions), partitions, shared_virtual=mode)
    order = importance_order(crawl)
    for _ in range(steps):
        next(order)
    return crawl


@pytest.mark.parametrize("mode", MODES)
def test_cash_is_conserved_over_the_partitions_together(mode: str) -> None:
    result = evaluate(generate(2000, 2, 5)[0], ("aopic",), partitions=6, seed=2, shared_virtual=mode)
    assert math.isclose(result["conservation"]["aopic"]["accounted"], 100.0, rel_tol=1e-9)
    assert result["shared_virtual_page"] == mode


def test_with_one_partition_every_mode_is_the_service_s_own_virtual_page() -> None:
    graph, _ = generate(2000, 4, 5)
    orders = {mode: evaluate(graph, ("aopic",), partitions=1, seed=4, shared_virtual=mode)["pagerank_share"]["aopic"]
              for mode in MODES}
    assert orders["weighted"] == orders["none"] == orders["all"]


def _pay(crawl: ImportanceCrawl, cash: float) -> tuple[list[float], list[float]]:
    """Puts ``cash`` on the first partition's virtual page and has it pay: each partition's rise of
    its dividend per unit of weight, and per known page."""
    engines = [shard.engine for shard in crawl.shards]
    before = [(e.totals.div_new, e.totals.div_all) for e in engines]
    engines[0].totals.virtual += cash
    engines[0].distribute()
    return ([e.totals.div_new - b[0] for e, b in zip(engines, before, strict=True)],
            [e.totals.div_all - b[1] for e, b in zip(engines, before, strict=True)])


def _weighted(crawl: ImportanceCrawl) -> list[bool]:
    return [s.engine.totals.weight_new >= 0.5 * s.engine.config.weights.smallest for s in crawl.shards]


def test_pooled_partitions_pay_the_same_dividend_per_unit_of_weight() -> None:
    crawl = _crawl("weighted", 4)
    assert all(isinstance(shard.engine, PooledEngine) for shard in crawl.shards)
    weighted = _weighted(crawl)
    assert sum(weighted) >= 2  # generated homes and index pages are spread over the partitions
    rises, _ = _pay(crawl, 1.0)
    assert len({round(r, 12) for r, w in zip(rises, weighted, strict=True) if w}) == 1
    paid = math.fsum(r * s.engine.totals.weight_new for r, s, w in zip(rises, crawl.shards, weighted, strict=True) if w)
    assert math.isclose(paid, 1.0, rel_tol=1e-9)
    alone, _ = _pay(_crawl("none", 4), 1.0)
    assert alone[0] > 0.0 and alone[1:] == [0.0, 0.0, 0.0]  # without the pool the first partition pays its own


def test_once_no_page_has_a_weight_all_pays_every_known_page_alike() -> None:
    crawl = _crawl("all", 4, pages=600, steps=500)
    assert not any(_weighted(crawl))  # every page with a discovery weight crawled
    _, rises = _pay(crawl, 1.0)
    assert len({round(r, 12) for r in rises}) == 1
    assert math.isclose(rises[0] * sum(s.engine.totals.known for s in crawl.shards), 1.0, rel_tol=1e-9)
    _, weighted_mode = _pay(_crawl("weighted", 4, pages=600, steps=500), 1.0)
    assert weighted_mode[0] > 0.0 and weighted_mode[1:] == [0.0, 0.0, 0.0]  # each partition its own, as the service


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown shared virtual page mode"):
        SharedVirtualPage("global")
