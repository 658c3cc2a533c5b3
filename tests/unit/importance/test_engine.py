"""The AOPIC engine: visits, the virtual page and its targets, the window, importance, conservation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libs.common.url_keys import UrlKind
from services.importance.discovery import UNIFORM, DiscoveryWeights
from services.importance.engine import OpicConfig, OpicEngine
from services.importance.shard import Shard

PAGE = UrlKind.PAGE


def engine(**config: object) -> OpicEngine:
    return OpicEngine(OpicConfig(**{"weights": UNIFORM, **config}), 100.0)  # type: ignore[arg-type]


def pages(e: OpicEngine, count: int, start: int = 0, host: str = "h.example") -> list[int]:
    return [e.add(start + i, host, PAGE) for i in range(count)]


def crawl(e: OpicEngine, s: int, targets: list[int], at: float = 1.0) -> float:
    """A visit of slot ``s`` sharing its cash like the shard does (all targets local)."""
    shard = Shard(0, e)
    keys = [int(e.keys[t]) for t in targets]
    before = e.effective_cash(s)
    shard.visit(int(e.keys[s]), f"http://h.example/{e.keys[s]}", keys, [f"http://h.example/{k}" for k in keys],
                [0] * len(keys), at)
    return before


def assert_conserved(e: OpicEngine) -> None:
    assert math.isclose(e.accounted(), e.expected(), rel_tol=1e-9, abs_tol=1e-9), (e.accounted(), e.expected())


def test_the_virtual_page_holds_all_cash_before_anything_is_known() -> None:
    e = engine()
    assert e.totals.virtual == 100.0 and e.accounted() == 100.0


def test_a_visit_moves_cash_to_history_and_shares_it_over_out_links_and_the_virtual_page() -> None:
    e = engine(virtual_share=0.25)
    page, a, b = pages(e, 3)
    e.distribute()  # 100 over three uncrawled pages
    assert e.effective_cash(page) == pytest.approx(100 / 3)

    crawl(e, page, [a, b])

    assert e.history[page] == pytest.approx(100 / 3)
    assert e.effective_cash(page) == 0.0
    assert e.crawled(page) and e.visits[page] == 1
    # a and b: their own third, 3/8 of the page's cash each, and half of the virtual quarter (two uncrawled left)
    expected = 100 / 3 + 100 / 3 * 0.375 + 100 / 3 * 0.25 / 2
    assert e.effective_cash(a) == pytest.approx(expected) and e.effective_cash(b) == pytest.approx(expected)
    assert e.totals.history == pytest.approx(100 / 3)
    assert_conserved(e)


def test_a_page_without_out_links_gives_everything_to_the_virtual_page() -> None:
    e = engine()
    page, other = pages(e, 2)
    e.distribute()
    crawl(e, page, [])
    assert e.effective_cash(other) == pytest.approx(100.0)
    assert_conserved(e)


def test_plain_opic_loses_the_cash_of_pages_without_out_links() -> None:
    e = engine(virtual_page=False, virtual_share=0.0)
    page, other = pages(e, 2)
    e.endow(page, 100.0)
    crawl(e, page, [])
    assert e.totals.lost == pytest.approx(100.0) and e.effective_cash(other) == 0.0
    assert_conserved(e)


def test_a_page_discovered_later_gets_only_later_dividends() -> None:
    e = engine()
    (first,) = pages(e, 1)
    e.distribute()
    (late,) = pages(e, 1, start=1)
    assert e.effective_cash(first) == pytest.approx(100.0) and e.effective_cash(late) == 0.0
    e.to_virtual(10.0)
    e.totals.initial += 10.0  # cash from outside, as a transfer would bring
    e.distribute()
    assert e.effective_cash(late) == pytest.approx(5.0)
    assert_conserved(e)


@pytest.mark.parametrize("to_all", [0.0, 0.5, 1.0])
def test_where_the_virtual_page_sends_its_cash_is_a_setting(to_all: float) -> None:
    e = engine(virtual_to_all=to_all, virtual_share=1.0)
    crawled, new = pages(e, 2)
    e.distribute()
    crawl(e, crawled, [])  # crawled's 50 back to the virtual page, then shared out
    uncrawled_share = 50 * (1 - to_all) + 50 * to_all / 2
    assert e.effective_cash(new) == pytest.approx(50 + uncrawled_share)
    assert e.effective_cash(crawled) == pytest.approx(50 * to_all / 2)
    assert_conserved(e)


def test_with_every_page_crawled_the_virtual_page_gives_to_all_of_them() -> None:
    e = engine()
    a, b = pages(e, 2)
    e.distribute()
    crawl(e, a, [b])
    crawl(e, b, [a])
    assert e.totals.weight_new == 0.0
    assert e.effective_cash(a) > 0 and e.effective_cash(b) > 0
    assert e.totals.virtual == 0.0
    assert_conserved(e)


def test_home_and_index_pages_get_dividends_by_weight_and_site_size() -> None:
    weights = DiscoveryWeights(home=8.0, index=2.0, site_size_exponent=1.0)
    e = OpicEngine(OpicConfig(weights=weights), 100.0)
    home = e.add(1, "a.example", UrlKind.HOME, "http://a.example/")
    section = e.add(2, "a.example", UrlKind.INDEX, "http://a.example/news/")
    page = e.add(3, "a.example", UrlKind.PAGE)
    # the home page alone weighed 0 (no other page of its site known); a.example doubled from 1 to 2 known URLs,
    # so its home and index pages were weighed again at size 2 (one other page each); at size 3 they keep that
    # weight until the site doubles again
    assert (e.weight[home], e.weight[section], e.weight[page]) == (8.0, 2.0, 1.0)
    e.distribute()
    assert e.effective_cash(home) == pytest.approx(100 * 8 / 11)
    assert e.effective_cash(page) == pytest.approx(100 / 11)
    e.add(4, "a.example", UrlKind.PAGE)  # size 4: weighed again (three other pages), already paid dividends kept
    assert e.weight[home] == 24.0
    assert e.effective_cash(home) == pytest.approx(100 * 8 / 11)
    assert_conserved(e)


def test_pages_of_weight_zero_get_no_discovery_dividends_until_no_weighted_page_is_left() -> None:
    e = OpicEngine(OpicConfig(weights=DiscoveryWeights(4.0, 2.0, 0.0, page=0.0), virtual_share=0.5), 100.0)
    home = e.add(1, "h.example", UrlKind.HOME)
    a, b = e.add(2, "h.example", PAGE), e.add(3, "h.example", PAGE)
    e.distribute()
    assert e.effective_cash(home) == pytest.approx(100.0) and e.effective_cash(a) == 0.0
    crawl(e, home, [a, b])  # 50 over the two links; the virtual half has no weighted page left: to all three
    assert e.effective_cash(a) == pytest.approx(25.0 + 50.0 / 3) == e.effective_cash(b)
    assert e.effective_cash(home) == pytest.approx(50.0 / 3)
    assert_conserved(e)
    crawl(e, a, [])
    assert_conserved(e)


def test_a_watched_home_page_is_due_again_once_its_cash_doubled() -> None:
    e = OpicEngine(OpicConfig(weights=DiscoveryWeights(4.0, 2.0, 0.0)), 100.0)
    home = e.add(1, "a.example", UrlKind.HOME, "http://a.example/")
    e.add(2, "a.example", UrlKind.PAGE)
    e.distribute()  # home 80, page 20
    assert e.due() == [home]  # its dividends arrived after it was first watched at cash 0
    e.announced(home)
    e.to_virtual(50.0)
    e.totals.initial += 50.0
    e.distribute()  # home 120: not doubled
    assert e.due() == []
    e.to_virtual(50.0)
    e.totals.initial += 50.0
    e.distribute()  # home 160: doubled
    assert e.due() == [home]


def test_window_shorter_than_the_gap_keeps_a_rate_not_a_sum() -> None:
    e = engine(window_seconds=10.0)
    page, other = pages(e, 2)
    e.distribute()
    crawl(e, page, [other], at=100.0)
    assert e.history[page] == pytest.approx(50.0)  # first visit: H += C
    e.give(page, 30.0)
    e.totals.initial += 30.0
    crawl(e, page, [other], at=140.0)  # S = 40 > T = 10: H = C * T / S
    assert e.history[page] == pytest.approx(30.0 * 10 / 40)
    assert e.totals.history == pytest.approx(e.history[page])
    assert_conserved(e)


def test_without_a_window_a_revisit_adds_to_the_history() -> None:
    e = engine()
    page, other = pages(e, 2)
    e.distribute()
    crawl(e, page, [other], at=1.0)
    first = e.history[page]
    crawl(e, other, [page], at=2.0)
    due = e.effective_cash(page)
    crawl(e, page, [other], at=3.0)
    assert e.history[page] == pytest.approx(first + due)
    assert_conserved(e)


def test_window_longer_than_the_gap_ages_the_old_history() -> None:
    e = engine(window_seconds=100.0)
    page, other = pages(e, 2)
    e.distribute()
    crawl(e, page, [other], at=0.0)
    e.give(page, 20.0)
    e.totals.initial += 20.0
    crawl(e, page, [other], at=25.0)  # S = 25 <= T = 100: H = H * (T - S) / T + C
    assert e.history[page] == pytest.approx(50.0 * 75 / 100 + 20.0)


def test_importance_is_history_plus_cash_over_all_history_plus_total_cash() -> None:
    e = engine()
    ids = pages(e, 5)
    e.distribute()
    for i, s in enumerate(ids):
        crawl(e, s, [ids[(i + 1) % 5], ids[(i + 2) % 5]])
    total = math.fsum(e.importance(s) for s in ids)
    assert total == pytest.approx(1.0)  # the virtual page holds nothing after a distribution
    s = ids[0]
    assert e.importance(s) == pytest.approx((e.history[s] + e.effective_cash(s)) / (e.totals.history + 100.0))


def test_importance_of_a_partition_scales_its_history_to_all_partitions() -> None:
    e = OpicEngine(OpicConfig(partitions=4, weights=UNIFORM), 25.0)
    a, b = pages(e, 2)
    e.distribute()
    crawl(e, a, [b])
    assert e.importance(a) == pytest.approx(12.5 / (4 * 12.5 + 100.0))


OPS = st.lists(
    st.tuples(
        st.sampled_from(["visit", "visit", "visit", "discover", "send", "receive", "replay"]),
        st.integers(0, 40),
        st.lists(st.integers(0, 60), max_size=6),
        st.floats(0.0, 1000.0),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(
    ops=OPS,
    to_all=st.sampled_from([0.0, 0.3, 1.0]),
    share=st.sampled_from([0.0, 0.15, 1.0]),
    window=st.sampled_from([math.inf, 5.0]),
    weights=st.sampled_from([UNIFORM, DiscoveryWeights(64.0, 8.0, 1.0), DiscoveryWeights(64.0, 8.0, 1.0, page=0.0)]),
    replays=st.sampled_from([0.0, 1.0, 4.0]),
)
def test_cash_is_conserved_through_any_sequence(ops: list[tuple[str, int, list[int], float]], to_all: float,
                                                share: float, window: float, weights: DiscoveryWeights,
                                                replays: float) -> None:
    config = OpicConfig(virtual_share=share, virtual_to_all=to_all, window_seconds=window, weights=weights,
                        replays_per_visit=replays)
    e = OpicEngine(config, 100.0)
    shard = Shard(0, e)
    kinds = ["/", "/s/", "/p.html"]

    def url(n: int) -> str:
        return f"http://h{n % 3}.example{kinds[n % 3] if n % 5 else '/'}{'' if n % 5 == 0 else n}"

    for op, page, targets, at in ops:
        if op == "discover":
            shard.page(page, url(page))
        elif op == "visit":
            distinct = [t for t in dict.fromkeys(targets) if t != page]
            owners = [0 if t % 4 else 1 for t in distinct]  # a quarter of the targets live elsewhere
            shard.visit(page, url(page), distinct, [url(t) for t in distinct], owners, at)
            shard.take_outgoing()
        elif op == "send":
            s = shard.page(page, url(page))
            amount = e.effective_cash(s) / 2
            e.settle(s)
            e.give(s, -amount)
            e.send(amount)
        elif op == "replay":  # crawled pages pass their cash on again over their kept out-links
            shard.replay(at)
            shard.take_outgoing()
            shard.announcements()
        else:
            shard.receive([page], [url(page)], [at / 100])
        e.distribute()
        assert_conserved(e)
