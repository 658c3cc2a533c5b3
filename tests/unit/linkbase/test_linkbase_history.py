"""The publish-time history rows of re-fetched hub pages (seed 001)."""

from __future__ import annotations

from libs.common.wire import messages as pb
from services.linkbase.history import MIDPOINT_MAX_GAP_MS, RevealedChild, revealed_children
from services.linkbase.rows import LinkRow, PageRow, resolve

HUB = resolve("http://news.test/")


def _links(*targets: str) -> list[LinkRow]:
    return [LinkRow(HUB, resolve(t), "", pb.LINK_CLASS_INTERNAL, False, True) for t in targets]


def test_children_new_since_the_previous_fetch_are_revealed() -> None:
    page = PageRow(HUB, 0, 10_000_000)
    before = {HUB.fp: {resolve("http://news.test/old").fp}}
    rows = revealed_children([page], {HUB.fp: 9_000_000}, before, _links("http://news.test/old",
                                                                          "http://news.test/new"))
    assert [(r.child_fp, r.previous_fetch_at_ms, r.fetched_at_ms) for r in rows] == [
        (resolve("http://news.test/new").fp, 9_000_000, 10_000_000)]
    assert rows[0].inferred_at_ms == 9_500_000


def test_first_fetches_and_redeliveries_reveal_nothing() -> None:
    page = PageRow(HUB, 0, 10_000_000)
    links = _links("http://news.test/a")
    assert revealed_children([page], {HUB.fp: None}, {}, links) == []
    assert revealed_children([page], {HUB.fp: 10_000_000}, {}, links) == []


def test_no_midpoint_when_the_fetches_are_an_hour_or_more_apart() -> None:
    row = RevealedChild(1, 2, MIDPOINT_MAX_GAP_MS, 3, 4, 0)
    assert row.inferred_at_ms is None
    assert RevealedChild(1, 2, MIDPOINT_MAX_GAP_MS - 2, 3, 4, 0).inferred_at_ms == MIDPOINT_MAX_GAP_MS // 2 - 1
