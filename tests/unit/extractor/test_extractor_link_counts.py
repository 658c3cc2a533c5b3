"""A page's links counted by class, as the scheduler receives them."""

from __future__ import annotations

from libs.common.wire import messages as pb
from services.extractor.link_counts import link_counts


def test_links_are_counted_by_class_with_nofollow_ones() -> None:
    page = pb.PageLinks(url="http://a.example/x", host="a.example", fetched_at_ms=1_700_000_000_000, links=[
        pb.Link(url="http://a.example/1", link_class=pb.LINK_CLASS_INTERNAL),
        pb.Link(url="http://blog.a.example/", link_class=pb.LINK_CLASS_INTERNAL),
        pb.Link(url="http://b.example/", link_class=pb.LINK_CLASS_EXTERNAL),
        pb.Link(url="http://c.example/", link_class=pb.LINK_CLASS_EXTERNAL, nofollow=True),
        pb.Link(url="http://d.example/", link_class=pb.LINK_CLASS_EXTERNAL),
        pb.Link(url="mailto:x@a.example", link_class=pb.LINK_CLASS_BAD, bad_reason="scheme"),
    ])
    counts = link_counts(page)
    assert (counts.url, counts.host, counts.fetched_at_ms) == ("http://a.example/x", "a.example", 1_700_000_000_000)
    assert (counts.internal_links, counts.external_links, counts.bad_links) == (2, 3, 1)


def test_a_page_without_links_counts_zero() -> None:
    counts = link_counts(pb.PageLinks(url="http://a.example/", host="a.example"))
    assert (counts.internal_links, counts.external_links, counts.bad_links) == (0, 0, 0)
