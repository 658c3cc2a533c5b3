"""A shard shares a visit's cash between its own pages and other partitions' pages, and announces changes."""

from __future__ import annotations

import math

import pytest

from services.importance.discovery import UNIFORM, DiscoveryWeights
from services.importance.engine import OpicConfig, OpicEngine
from services.importance.shard import Shard


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


def test_announcements_cover_touched_pages_and_home_pages_whose_cash_doubled() -> None:
    engine = OpicEngine(OpicConfig(weights=DiscoveryWeights(4.0, 2.0, 0.0)), 100.0)
    shard = Shard(0, engine)
    shard.page(1, "http://a.example/")
    shard.page(2, "http://a.example/x.html")
    assert shard.announcements() == []
    engine.distribute()  # the home page gets 80, the other page 20
    (home,) = shard.announcements()
    assert (home.url, home.host, home.cash) == ("http://a.example/", "a.example", pytest.approx(80.0))

    shard.visit(2, "http://a.example/x.html", [], [], [], 1.0)  # its 20 go to the home page: 100, not doubled
    (page,) = shard.announcements()
    assert (page.url, page.cash, page.history) == ("http://a.example/x.html", 0.0, pytest.approx(20.0))
    assert page.importance == pytest.approx(20.0 / (20.0 + 100.0))
    engine.to_virtual(70.0)
    engine.totals.initial += 70.0
    engine.distribute()  # 170: doubled since it was announced at 80
    assert [a.url for a in shard.announcements()] == ["http://a.example/"]
