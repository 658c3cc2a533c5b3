"""A shard shares a visit's cash between its own pages and other partitions' pages, and announces changes."""

from __future__ import annotations

import math

import pytest

from services.importance.discovery import UNIFORM, DiscoveryWeights
from services.importance.engine import OpicConfig, OpicEngine
from services.importance.shard import Shard, internal_links, replay_priority


def test_shares_for_pages_of_other_partitions_leave_as_outgoing_transfers() -> None:
    config = OpicConfig(weights=UNIFORM, virtual_share=0.2, partitions=2)
    here, there = Shard(0, OpicEngine(config, 50.0)), Shard(1, OpicEngine(config, 50.0))
    here.page(1, "http://a.example/1")
    here.engine.distribute()  # page 1 holds partition 0's 50
    here.visit(1, "http://a.example/1", [2, 3, 4, 5], [f"http://a.example/{k}" for k in (2, 3, 4, 5)],
               [0, 1, 1, 0], 10.0)

    outgoing = here.take_outgoing()
    assert list(outgoing) == [1]
    out = outgoing[1]
    assert (out.keys, out.urls) == ([3, 4], ["http://a.example/3", "http://a.example/4"])
    assert out.cash == [pytest.approx(10.0), pytest.approx(10.0)]
    assert here.engine.totals.sent == pytest.approx(20.0)
    there.receive(out.keys, out.urls, out.cash)
    assert there.engine.totals.received == pytest.approx(20.0)
    total = here.engine.accounted() + there.engine.accounted()
    assert math.isclose(total, 100.0, rel_tol=1e-12)
    assert here.take_outgoing() == {}


def test_small_changes_are_not_announced_again_unless_the_page_is_visited() -> None:
    engine = OpicEngine(OpicConfig(weights=UNIFORM, announce_min_change=0.1), 100.0)
    shard = Shard(0, engine)
    shard.receive([1, 2], ["http://a.example/1", "http://a.example/2"], [10.0, 10.0])
    assert {a.url for a in shard.announcements()} == {"http://a.example/1", "http://a.example/2"}  # first time
    shard.receive([1, 2], ["http://a.example/1", "http://a.example/2"], [0.5, 2.0])
    assert [a.url for a in shard.announcements()] == ["http://a.example/2"]  # 5% is below the threshold
    shard.receive([1], ["http://a.example/1"], [0.6])  # 11% since it was last announced
    assert [a.cash for a in shard.announcements()] == [pytest.approx(11.1)]
    shard.visit(1, "http://a.example/1", [], [], [], 5.0)
    assert [(a.url, a.cash) for a in shard.announcements()] == [("http://a.example/1", 0.0)]


def test_a_visited_page_is_announced_even_when_dividends_leave_it_some_cash() -> None:
    engine = OpicEngine(OpicConfig(weights=UNIFORM, virtual_to_all=1.0, announce_min_change=1.0), 100.0)
    shard = Shard(0, engine)
    one, two = "http://a.example/1", "http://a.example/2"
    shard.page(1, one)
    shard.page(2, two)
    engine.distribute()  # 50 each
    shard.visit(2, two, [1], [one], [0], 1.0)  # 42.5 to page 1, 7.5 to the virtual page: 3.75 to each page
    assert {a.url: a.cash for a in shard.announcements()} == {one: pytest.approx(96.25), two: pytest.approx(3.75)}
    shard.visit(1, one, [2], [two], [0], 2.0)  # 81.8125 to page 2, 14.4375 to the virtual page: 7.21875 each
    # page 1 keeps 7.21875 of the 96.25 last announced: within a change of 100%, but a visit is always announced
    assert {a.url: a.cash for a in shard.announcements()} == {one: pytest.approx(7.21875),
                                                              two: pytest.approx(92.78125)}
    assert math.isclose(engine.accounted(), 100.0, rel_tol=1e-12)


def test_seeds_are_paid_alike_by_the_virtual_page_and_announced_once_they_have_cash() -> None:
    engine = OpicEngine(OpicConfig(weights=UNIFORM, virtual_to_all=1.0), 100.0)
    shard = Shard(0, engine)
    one, two, late = "http://a.example/", "http://b.example/", "http://c.example/"
    shard.seed(1, one)
    shard.seed(2, two)
    assert {a.url: a.cash for a in shard.announcements()} == {one: 50.0, two: 50.0}
    shard.seed(3, late)  # the virtual page has nothing left to pay it: an announced 0 would rank it last
    assert shard.announcements() == []
    shard.visit(1, one, [], [], [], 1.0)  # all of it back to the virtual page, paid to the three pages alike
    assert {a.url: a.cash for a in shard.announcements()} == {one: pytest.approx(50 / 3)}
    assert engine.effective_cash(engine.slots[3]) == pytest.approx(50 / 3)
    assert math.isclose(engine.accounted(), 100.0, rel_tol=1e-12)


def test_announcements_cover_touched_pages_and_home_pages_whose_cash_doubled() -> None:
    engine = OpicEngine(OpicConfig(weights=DiscoveryWeights(4.0, 2.0, 0.0)), 100.0)
    shard = Shard(0, engine)
    shard.page(1, "http://a.example/")
    shard.page(2, "http://a.example/x.html")
    assert shard.announcements() == []
    engine.distribute()  # the home page gets 80, the other page 20
    (home,) = shard.announcements()
    assert (home.url, home.host) == ("http://a.example/", "a.example") and home.cash == pytest.approx(80.0)

    shard.visit(2, "http://a.example/x.html", [], [], [], 1.0)  # its 20 go to the home page: 100, not doubled
    (page,) = shard.announcements()
    assert (page.url, page.cash) == ("http://a.example/x.html", 0.0) and page.history == pytest.approx(20.0)
    assert page.importance == pytest.approx(20.0 / (20.0 + 100.0))
    engine.to_virtual(70.0)
    engine.totals.initial += 70.0
    engine.distribute()  # 170: doubled since it was announced at 80
    assert [a.url for a in shard.announcements()] == ["http://a.example/"]


def replaying_pair(replays: float) -> tuple[Shard, Shard]:
    config = OpicConfig(weights=UNIFORM, virtual_share=0.2, partitions=2, replays_per_visit=replays)
    return Shard(0, OpicEngine(config, 50.0)), Shard(1, OpicEngine(config, 50.0))


def deliver(source: Shard, destination: Shard) -> None:
    for dest, out in source.take_outgoing().items():
        assert dest == destination.partition
        destination.receive(out.keys, out.urls, out.cash)


def test_a_replay_passes_the_cash_received_since_the_crawl_over_the_kept_out_links() -> None:
    here, there = replaying_pair(1.0)
    a, b, c, d = "http://a.example/a", "http://a.example/b", "http://b.example/c", "http://a.example/d"
    here.page(1, a)
    here.page(9, d)  # never crawled: the virtual page's cash goes to it
    here.engine.distribute()  # 25 each
    here.visit(1, a, [2, 3], [b, c], [0, 1], 1.0)  # 10 to b here, 10 to c there, 5 to the virtual page
    deliver(here, there)
    here.announcements()
    # the crawl of 1 earned one replay, but 1 holds no cash yet (b is not crawled: it has no kept links)
    assert here.replay(2.0) == 0
    here.receive([1], [a], [8.0])  # an in-link of page 1 passes it 8 credits
    here.visit(2, b, [], [], [], 3.0)  # b crawled: earns one more replay, its cash goes to the virtual page
    assert here.replay(4.0) == 1  # page 1 is replayed: its 8 go to b (3.2), c (3.2) and the virtual page (1.6)
    engine = here.engine
    assert engine.effective_cash(engine.slots[1]) == 0.0
    assert engine.history[engine.slots[1]] == pytest.approx(33.0)
    assert engine.effective_cash(engine.slots[2]) == pytest.approx(3.2)
    assert engine.visits[engine.slots[1]] == 1  # a replay is not a crawl
    out = here.take_outgoing()[1]
    assert (out.keys, out.urls) == ([3], [""]) and out.cash == pytest.approx([3.2])  # the owner knows c's URL
    there.receive(out.keys, out.urls, out.cash)
    assert {x.url: x.cash for x in there.announcements()} == {c: pytest.approx(13.2)}
    # the replayed page's drop is not announced (the scheduler weighs its refetch by the cash it saw
    # grow since the crawl); b's 3.2 (from 0 at its crawl) is
    assert {x.url: x.cash for x in here.announcements()} == {b: pytest.approx(3.2)}
    assert math.isclose(here.engine.accounted(), here.engine.expected(), rel_tol=1e-12)
    assert math.isclose(here.engine.accounted() + there.engine.accounted(), 108.0, rel_tol=1e-12)  # 8 came in


def test_replays_take_every_crawled_page_with_cash_and_no_more_than_earned() -> None:
    here, _ = replaying_pair(1.5)
    urls = {k: f"http://a.example/{k}" for k in range(1, 6)}
    for k in (1, 2, 3):
        here.visit(k, urls[k], [4, 5], [urls[4], urls[5]], [0, 0], float(k))  # three crawls earn 4.5 replays
    here.take_outgoing()
    here.announcements()
    here.receive([1, 2, 3], [urls[1], urls[2], urls[3]], [1.0, 5.0, 3.0])
    histories = {k: here.engine.history[here.engine.slots[k]] for k in (1, 2, 3)}
    assert here.replay(10.0) == 3  # every crawled page with cash, most first; the rest of the budget waits
    after = {k: here.engine.history[here.engine.slots[k]] - histories[k] for k in (1, 2, 3)}
    assert after == {1: pytest.approx(1.0), 2: pytest.approx(5.0), 3: pytest.approx(3.0)}
    assert here.engine.last_visit[here.engine.slots[2]] == 10.0
    # the cash is passed on: nothing left to replay, and the unspent budget is dropped, not hoarded
    assert here.replay(11.0) == 0
    here.receive([2], [urls[2]], [1.0])
    assert here.replay(12.0) == 0


def test_no_replays_without_the_setting_and_no_links_kept() -> None:
    here, _ = replaying_pair(0.0)
    here.visit(1, "http://a.example/1", [2], ["http://a.example/2"], [0], 1.0)
    here.receive([1], ["http://a.example/1"], [5.0])
    assert here.replay(2.0) == 0 and here.engine.links == {}


def test_a_replayed_share_for_an_unknown_page_keeps_its_cash() -> None:
    _, there = replaying_pair(1.0)
    there.receive([7], [""], [2.5])  # a share without URL for a page partition 1 never saw
    assert there.engine.effective_cash(there.engine.slots[7]) == pytest.approx(2.5)
    assert there.announcements() == []  # no URL to announce it with


def test_a_replay_takes_the_page_with_the_largest_cash_for_its_size_first() -> None:
    here, _ = replaying_pair(0.5)
    big, small, other = "http://a.example/big", "http://a.example/small", "http://a.example/x"
    here.page(1, big)
    here.engine.distribute()  # all 50 on the only page
    here.visit(1, big, [3], [other], [0], 1.0)  # history 50
    here.visit(2, small, [3], [other], [0], 2.0)  # history 0: two crawls earned one replay
    here.announcements()
    here.receive([1, 2], [big, small], [4.0, 1.0])
    engine = here.engine
    assert replay_priority(engine, engine.slots[1]) == pytest.approx(4.0 / math.sqrt(54.0))
    assert replay_priority(engine, engine.slots[2]) == pytest.approx(1.0)
    assert here.replay(3.0) == 1
    # the small page's 1 credit is all it ever received: it goes before the 4 of a page that holds 54
    assert engine.effective_cash(engine.slots[2]) == 0.0 and engine.effective_cash(engine.slots[1]) == 4.0


def test_links_to_the_same_host_and_port_are_internal_whatever_the_scheme() -> None:
    page = "http://a.example/x/y.html"
    targets = ["https://a.example/", "http://a.example/z", "http://b.example/", "http://a.example:8080/",
               "http://a.example.org/", "http://sub.a.example/"]
    assert internal_links(page, targets) == [True, True, False, False, False, False]
    assert internal_links("http://a.example:8080/", ["http://a.example:8080/p", "http://a.example/p"]) == [True, False]


def weighted_pair(weight: float, replays: float = 0.0) -> tuple[Shard, Shard]:
    config = OpicConfig(weights=UNIFORM, virtual_share=0.0, internal_link_weight=weight, replays_per_visit=replays,
                        partitions=2)  # no share for the virtual page: its dividends would blur the shares
    return Shard(0, OpicEngine(config, 50.0)), Shard(1, OpicEngine(config, 50.0))


def test_a_page_sends_most_of_its_cash_out_of_its_site_when_internal_links_weigh_less() -> None:
    here, there = weighted_pair(0.25)
    a = "http://a.example/1"
    targets = {2: "http://a.example/2", 3: "http://a.example/3", 4: "http://b.example/", 5: "http://c.example/5"}
    here.page(1, a)
    here.engine.distribute()  # page 1 holds partition 0's 50
    # 50 to share over two internal links (weight 0.25 each) and two external ones (1 each): 20 and 5
    here.visit(1, a, list(targets), list(targets.values()), [0, 1, 0, 1], 1.0)
    engine = here.engine
    assert engine.effective_cash(engine.slots[2]) == pytest.approx(5.0)
    assert engine.effective_cash(engine.slots[4]) == pytest.approx(20.0)
    out = here.take_outgoing()[1]
    assert out.keys == [3, 5] and out.cash == [pytest.approx(5.0), pytest.approx(20.0)]
    assert engine.totals.sent == pytest.approx(25.0)
    there.receive(out.keys, out.urls, out.cash)
    assert math.isclose(here.engine.accounted() + there.engine.accounted(), 100.0, rel_tol=1e-12)


def test_a_page_whose_links_are_all_of_one_kind_shares_equally() -> None:
    for targets in (["http://a.example/2", "http://a.example/3"], ["http://b.example/", "http://c.example/"]):
        here, _ = weighted_pair(0.1)
        here.page(1, "http://a.example/1")
        here.engine.distribute()
        here.visit(1, "http://a.example/1", [2, 3], targets, [0, 0], 1.0)
        engine = here.engine
        assert [engine.effective_cash(engine.slots[k]) for k in (2, 3)] == [pytest.approx(25.0)] * 2


def test_a_replay_weighs_the_kept_links_as_the_crawl_did() -> None:
    here, there = weighted_pair(0.5, replays=1.0)
    a, b, c = "http://a.example/a", "http://a.example/b", "http://b.example/c"
    here.visit(1, a, [2, 3], [b, c], [0, 1], 1.0)
    here.take_outgoing()
    engine = here.engine
    kept = engine.kept_links(engine.slots[1])
    assert kept is not None and list(kept[1]) == [0, 1]  # the owners, without the internal flag
    here.receive([1], [a], [9.0])
    before = engine.effective_cash(engine.slots[2])
    assert here.replay(2.0) == 1  # 9 over b (weight 0.5) and c (1)
    assert engine.effective_cash(engine.slots[2]) - before == pytest.approx(3.0)
    out = here.take_outgoing()[1]
    assert out.keys == [3] and out.cash == [pytest.approx(6.0)]
    there.receive(out.keys, out.urls, out.cash)
    assert math.isclose(engine.accounted(), engine.expected(), rel_tol=1e-12)


def test_a_target_given_twice_gets_two_shares_at_the_crawl_and_at_its_replays() -> None:
    here, there = weighted_pair(1.0, replays=1.0)
    a, b, c, d = "http://a.example/a", "http://a.example/b", "http://a.example/c", "http://b.example/d"
    here.page(1, a)
    here.engine.distribute()  # page 1 holds partition 0's 50
    here.visit(1, a, [2, 2, 3, 4, 4], [b, b, c, d, d], [0, 0, 0, 1, 1], 1.0)  # b and d linked twice
    engine = here.engine
    assert engine.effective_cash(engine.slots[2]) == pytest.approx(20.0)
    assert engine.effective_cash(engine.slots[3]) == pytest.approx(10.0)
    out = here.take_outgoing()[1]
    assert out.keys == [4] and out.cash == [pytest.approx(20.0)]  # d's two shares travel as one
    there.receive(out.keys, out.urls, out.cash)
    assert there.engine.effective_cash(there.engine.slots[4]) == pytest.approx(20.0)
    here.receive([1], [a], [10.0])
    before = engine.effective_cash(engine.slots[2]), engine.effective_cash(engine.slots[3])
    assert here.replay(2.0) == 1
    assert engine.effective_cash(engine.slots[2]) - before[0] == pytest.approx(4.0)
    assert engine.effective_cash(engine.slots[3]) - before[1] == pytest.approx(2.0)
    out = here.take_outgoing()[1]
    there.receive(out.keys, out.urls, out.cash)
    assert math.isclose(here.engine.accounted() + there.engine.accounted(), 100.0 + 10.0, rel_tol=1e-12)


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5])
def test_the_internal_link_weight_is_within_zero_and_one(weight: float) -> None:
    with pytest.raises(ValueError, match="internal_link_weight"):
        OpicConfig(internal_link_weight=weight)
