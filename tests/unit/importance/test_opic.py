"""OPIC with a virtual page: visits, the virtual page's dividends, importance, conservation, convergence."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.importance.opic import (
    PageCash,
    Totals,
    distribute_virtual,
    effective_cash,
    importance,
    new_page,
    visit,
)


def fresh_totals(total_cash: float = 100.0) -> Totals:
    """The state before anything is known: all cash sits in the virtual page."""
    return Totals(virtual_cash=total_cash, dividend=0.0, uncrawled=0, history_total=0.0, total_cash=total_cash)


def discover(totals: Totals, count: int, start: int = 0) -> list[PageCash]:
    return [new_page(start + i, f"http://h{start + i}.example/", f"h{start + i}.example", totals) for i in range(count)]


def ledger(pages: list[PageCash], totals: Totals) -> float:
    """All cash accounted for: the pages' own, their unclaimed dividends and the virtual page's."""
    owned = sum(p.cash for p in pages)
    unclaimed = sum(
        (totals.crawled_dividend if p.crawled else totals.dividend) - p.dividend_mark for p in pages
    )
    return owned + unclaimed + totals.virtual_cash


# -- visits ---------------------------------------------------------------------


def test_visit_moves_cash_to_history_and_splits_it_over_targets_and_the_virtual_page() -> None:
    totals = fresh_totals()
    page, a, b = discover(totals, 3)
    page.cash = 9.0
    totals.virtual_cash -= 9.0

    given_away = visit(page, [a, b], totals, at_ms=1234)

    assert given_away == pytest.approx(9.0)
    assert page.cash == 0.0
    assert page.history == pytest.approx(9.0)
    assert page.crawled and page.visits == 1 and page.last_visit_ms == 1234
    assert a.cash == pytest.approx(3.0) and b.cash == pytest.approx(3.0)
    assert totals.virtual_cash == pytest.approx(91.0 + 3.0)
    assert totals.history_total == pytest.approx(9.0)
    assert totals.uncrawled == 2 and totals.crawled == 1
    assert ledger([page, a, b], totals) == pytest.approx(100.0)


def test_first_visit_collects_the_dividends_the_page_was_owed() -> None:
    totals = fresh_totals()
    page, other = discover(totals, 2)
    assert distribute_virtual(totals)
    assert effective_cash(page, totals) == pytest.approx(50.0)

    visit(page, [other], totals, at_ms=1)

    assert page.history == pytest.approx(50.0)
    assert effective_cash(page, totals) == 0.0
    assert effective_cash(other, totals) == pytest.approx(75.0)  # its own dividend and half of the page's cash


def test_page_without_out_links_gives_everything_to_the_virtual_page() -> None:
    totals = fresh_totals()
    (page,) = discover(totals, 1)
    distribute_virtual(totals)

    visit(page, [], totals, at_ms=1)

    assert page.history == pytest.approx(100.0)
    assert totals.virtual_cash == pytest.approx(100.0)
    assert ledger([page], totals) == pytest.approx(100.0)


def test_visit_of_a_page_without_cash_gives_nothing() -> None:
    totals = fresh_totals()
    page, target = discover(totals, 2)

    assert visit(page, [target], totals, at_ms=1) == 0.0
    assert target.cash == 0.0 and totals.virtual_cash == 100.0 and page.visits == 1


# -- the virtual page -------------------------------------------------------------


def test_distribute_virtual_shares_equally_among_uncrawled_pages_only() -> None:
    totals = fresh_totals()
    crawled, u1, u2 = discover(totals, 3)
    distribute_virtual(totals)
    visit(crawled, [], totals, at_ms=1)  # 100/3 back to the virtual page
    before = effective_cash(u1, totals)

    assert distribute_virtual(totals)

    assert totals.virtual_cash == 0.0
    assert effective_cash(crawled, totals) == 0.0
    assert effective_cash(u1, totals) == pytest.approx(before + 100.0 / 6)
    assert effective_cash(u2, totals) == pytest.approx(effective_cash(u1, totals))
    assert ledger([crawled, u1, u2], totals) == pytest.approx(100.0)


def test_pages_discovered_later_get_no_share_of_earlier_dividends() -> None:
    totals = fresh_totals()
    (early,) = discover(totals, 1)
    distribute_virtual(totals)
    (late,) = discover(totals, 1, start=1)

    assert effective_cash(early, totals) == pytest.approx(100.0)
    assert effective_cash(late, totals) == 0.0


def test_distribute_virtual_with_nobody_to_give_to_keeps_the_cash() -> None:
    totals = fresh_totals()
    assert not distribute_virtual(totals)
    assert totals.virtual_cash == 100.0 and totals.dividend == 0.0


def test_distribute_virtual_with_no_cash_changes_nothing() -> None:
    totals = fresh_totals()
    discover(totals, 2)
    distribute_virtual(totals)
    dividend = totals.dividend

    assert not distribute_virtual(totals)
    assert totals.dividend == dividend


def test_when_every_page_is_crawled_the_virtual_page_gives_to_all_of_them() -> None:
    # Otherwise it would be a sink: on a fully crawled graph all cash would end there and
    # history would stop growing, so importance would never converge.
    totals = fresh_totals()
    a, b = discover(totals, 2)
    distribute_virtual(totals)
    visit(a, [b], totals, at_ms=1)
    visit(b, [a], totals, at_ms=2)
    assert totals.uncrawled == 0 and totals.virtual_cash > 0

    virtual = totals.virtual_cash
    cash_a, cash_b = effective_cash(a, totals), effective_cash(b, totals)
    assert distribute_virtual(totals)

    assert totals.virtual_cash == 0.0
    assert effective_cash(a, totals) == pytest.approx(cash_a + virtual / 2)
    assert effective_cash(b, totals) == pytest.approx(cash_b + virtual / 2)
    assert ledger([a, b], totals) == pytest.approx(100.0)

    visit(a, [], totals, at_ms=3)  # collects its dividend, then owes nothing more
    assert effective_cash(a, totals) == 0.0
    assert ledger([a, b], totals) == pytest.approx(100.0)


# -- importance -----------------------------------------------------------------


def test_importance_is_history_plus_cash_over_total_history_plus_total_cash() -> None:
    totals = fresh_totals()
    a, b, c = discover(totals, 3)
    distribute_virtual(totals)  # 100/3 each
    visit(a, [b], totals, at_ms=1)  # a: H = 100/3; b gets 100/6

    denominator = 100.0 / 3 + 100.0
    assert importance(a, totals) == pytest.approx((100.0 / 3) / denominator)
    assert importance(b, totals) == pytest.approx((100.0 / 3 + 100.0 / 6) / denominator)
    assert importance(c, totals) == pytest.approx((100.0 / 3) / denominator)
    assert importance(b, totals) > importance(a, totals)


def test_importance_before_anything_was_crawled() -> None:
    totals = fresh_totals(total_cash=10.0)
    a, b = discover(totals, 2)
    assert importance(a, totals) == 0.0
    distribute_virtual(totals)
    assert importance(a, totals) == pytest.approx(0.5)
    assert importance(b, totals) == pytest.approx(0.5)


# -- conservation through any sequence of operations ------------------------------

Op = tuple[str, int, list[int], int]

operation: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("discover"), st.integers(1, 4), st.just([]), st.just(0)),
    st.tuples(
        st.just("visit"),
        st.integers(0, 10_000),
        st.lists(st.integers(0, 10_000), max_size=6),
        st.integers(0, 3),
    ),
    st.tuples(st.just("distribute"), st.just(0), st.just([]), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(
    total_cash=st.sampled_from([1.0, 100.0, 12_345.678, 1e6]),
    initial=st.integers(0, 5),
    operations=st.lists(operation, max_size=80),
)
def test_cash_is_conserved_through_any_sequence(total_cash: float, initial: int, operations: list[Op]) -> None:
    totals = fresh_totals(total_cash)
    pages = discover(totals, initial)

    def check() -> None:
        assert math.isclose(ledger(pages, totals), total_cash, rel_tol=1e-9)
        assert totals.uncrawled == sum(not p.crawled for p in pages)
        assert totals.crawled == sum(p.crawled for p in pages)
        assert math.isclose(totals.history_total, sum(p.history for p in pages), rel_tol=1e-9, abs_tol=1e-12)
        assert all(effective_cash(p, totals) >= -1e-9 * total_cash for p in pages)

    check()
    for kind, number, picks, new_count in operations:
        if kind == "discover":
            pages.extend(discover(totals, number, start=len(pages)))
        elif kind == "visit":
            if not pages:
                pages.extend(discover(totals, 1))
            page = pages[number % len(pages)]
            chosen = {pages[i % len(pages)].url_fp: pages[i % len(pages)] for i in picks}
            chosen.pop(page.url_fp, None)
            fresh = discover(totals, new_count, start=len(pages))
            pages.extend(fresh)
            visit(page, [*chosen.values(), *fresh], totals, at_ms=len(pages))
        else:
            distribute_virtual(totals)
        check()


# -- greedy crawling converges to the graph's PageRank ------------------------------


def strongly_connected_graph(n: int, seed: int) -> dict[int, list[int]]:
    """A ring (so every page reaches every other), random chords, and a hub most pages link to."""
    rng = random.Random(seed)
    edges: dict[int, set[int]] = {i: {(i + 1) % n} for i in range(n)}
    for _ in range(2 * n):
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            edges[a].add(b)
    for i in range(1, n):
        if rng.random() < 0.6:
            edges[i].add(0)
    return {i: sorted(targets) for i, targets in edges.items()}


def pagerank_with_virtual_page(edges: dict[int, list[int]], iterations: int = 3000) -> list[float]:
    """Power iteration on the graph OPIC walks: each page also links to a virtual page that links to all."""
    n = len(edges)
    rank = [1.0 / (n + 1)] * (n + 1)  # index n is the virtual page
    for _ in range(iterations):
        nxt = [0.0] * (n + 1)
        for i, targets in edges.items():
            share = rank[i] / (len(targets) + 1)
            for j in targets:
                nxt[j] += share
            nxt[n] += share
        for j in range(n):
            nxt[j] += rank[n] / n
        rank = nxt
    real = sum(rank[:n])
    return [r / real for r in rank[:n]]


def pagerank(edges: dict[int, list[int]], damping: float = 0.85, iterations: int = 200) -> list[float]:
    """Classic PageRank by power iteration (no dangling pages in these graphs)."""
    n = len(edges)
    rank = [1.0 / n] * n
    for _ in range(iterations):
        nxt = [(1 - damping) / n] * n
        for i, targets in edges.items():
            for j in targets:
                nxt[j] += damping * rank[i] / len(targets)
        rank = nxt
    return rank


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(values: list[float]) -> list[int]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0] * len(values)
        for rank, i in enumerate(order):
            out[i] = rank
        return out

    ra, rb = ranks(a), ranks(b)
    n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb, strict=True)) / (n * (n * n - 1))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_greedy_visits_converge_to_pagerank(seed: int) -> None:
    n = 12
    edges = strongly_connected_graph(n, seed)
    totals = fresh_totals()
    pages = discover(totals, n)
    distribute_virtual(totals)

    for step in range(4000):
        page = max(pages, key=lambda p: effective_cash(p, totals))  # greedy: the most cash first
        visit(page, [pages[j] for j in edges[page.url_fp]], totals, at_ms=step)
        distribute_virtual(totals)

    # The error bound 1/|H| keeps shrinking: no cash is trapped anywhere.
    assert totals.history_total > 300 * totals.total_cash
    assert math.isclose(ledger(pages, totals), totals.total_cash, rel_tol=1e-9)

    scores = [importance(p, totals) for p in pages]
    estimate = [s / sum(scores) for s in scores]
    exact = pagerank_with_virtual_page(edges)
    assert max(abs(e - x) / x for e, x in zip(estimate, exact, strict=True)) < 0.05
    assert spearman(estimate, exact) > 0.95

    classic = pagerank(edges)
    assert spearman(estimate, classic) > 0.7
    assert max(range(n), key=lambda i: estimate[i]) == max(range(n), key=lambda i: classic[i])
