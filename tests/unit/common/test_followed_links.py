"""The followed links of a page: written from its links, read back the same with or without the lists."""

from __future__ import annotations

import random

import pytest

from libs.common.followed_links import fill_followed, followed
from libs.common.url_keys import normalized_fingerprints
from libs.common.urls import url_fingerprint
from libs.common.wire import messages as pb

PAGE = "https://a.example/page.html"
INTERNAL, EXTERNAL, BAD = pb.LINK_CLASS_INTERNAL, pb.LINK_CLASS_EXTERNAL, pb.LINK_CLASS_BAD


def page_links(links: list[pb.Link], nofollow: bool = False) -> pb.PageLinks:
    return pb.PageLinks(url=PAGE, host="a.example", links=links, nofollow=nofollow)


def test_fill_keeps_distinct_followable_links_in_order_without_the_page() -> None:
    msg = page_links([
        pb.Link(url="https://a.example/b", link_class=INTERNAL),
        pb.Link(url="https://z.example/", link_class=EXTERNAL),
        pb.Link(url="https://a.example/b", link_class=INTERNAL),  # again
        pb.Link(url=PAGE, link_class=INTERNAL),  # the page itself
        pb.Link(url="https://a.example/n", link_class=INTERNAL, nofollow=True),
        pb.Link(url="javascript:x()", link_class=BAD),
        pb.Link(url="", link_class=INTERNAL),
        pb.Link(url="https://a.example/c", link_class=INTERNAL),
    ])
    fill_followed(msg)
    assert list(msg.followed_urls) == ["https://a.example/b", "https://z.example/", "https://a.example/c"]
    assert list(msg.followed_external) == [False, True, False]
    assert list(msg.followed_fingerprints) == normalized_fingerprints(msg.followed_urls)
    fill_followed(msg)  # filling again replaces, never appends
    assert len(msg.followed_urls) == 3
    nofollow = page_links(list(msg.links), nofollow=True)
    fill_followed(nofollow)
    assert list(nofollow.followed_urls) == []


@pytest.mark.parametrize("follow_external", [True, False])
def test_reading_the_lists_gives_what_reading_the_links_gives(follow_external: bool) -> None:
    rng = random.Random(7)
    for _ in range(50):
        links = []
        for _ in range(rng.randrange(12)):  # a URL's class follows from the URL, as the extractor gives it
            host, path = rng.choice("abc"), rng.randrange(8)
            kind = BAD if path == 7 else INTERNAL if host == "a" else EXTERNAL
            links.append(pb.Link(url=f"https://{host}.example/{path}", link_class=kind, nofollow=rng.random() < 0.1))
        plain = page_links(links, nofollow=rng.random() < 0.1)
        filled = pb.PageLinks.FromString(plain.SerializeToString())
        fill_followed(filled)
        page_fp = url_fingerprint(PAGE)
        expected = followed(plain, page_fp, follow_external)
        assert followed(filled, page_fp, follow_external) == expected
        wanted = {link.url for link in links if link.url and not link.nofollow and link.link_class != BAD
                  and (follow_external or link.link_class != EXTERNAL)} if not plain.nofollow else set()
        assert set(expected[1]) == wanted
        assert expected[0] == normalized_fingerprints(expected[1])


def test_the_lists_are_read_without_the_links() -> None:
    msg = pb.PageLinks(url=PAGE, followed_urls=["https://b.example/"], followed_external=[True],
                       followed_fingerprints=[url_fingerprint("https://b.example/")])
    assert followed(msg, url_fingerprint(PAGE), True)[1] == ["https://b.example/"]
    assert followed(msg, url_fingerprint(PAGE), False) == ([], [])


def test_lists_of_different_lengths_are_refused() -> None:
    msg = pb.PageLinks(url=PAGE, followed_urls=["https://b.example/"], followed_external=[False, True],
                       followed_fingerprints=[url_fingerprint("https://b.example/")])
    with pytest.raises(ValueError, match="different lengths"):
        followed(msg, url_fingerprint(PAGE), True)


def test_repeats_and_the_page_itself_in_the_lists_are_left_out() -> None:
    urls = ["https://b.example/", PAGE, "https://b.example/"]
    msg = pb.PageLinks(url=PAGE, followed_urls=urls, followed_external=[True, False, True],
                       followed_fingerprints=normalized_fingerprints(urls))
    assert followed(msg, url_fingerprint(PAGE), True)[1] == ["https://b.example/"]


def test_a_link_the_page_carries_several_times_counts_as_often_up_to_the_bound() -> None:
    msg = page_links([
        pb.Link(url="https://a.example/b", link_class=INTERNAL, occurrences=3),  # menu, text and footer
        pb.Link(url="https://z.example/", link_class=EXTERNAL),
        pb.Link(url="https://a.example/c", link_class=INTERNAL, occurrences=2),
    ])
    fill_followed(msg)
    assert list(msg.followed_counts) == [3, 1, 2]
    page_fp = url_fingerprint(PAGE)
    assert followed(msg, page_fp, True)[1] == ["https://a.example/b", "https://z.example/", "https://a.example/c"]
    b, z, c = "https://a.example/b", "https://z.example/", "https://a.example/c"
    assert followed(msg, page_fp, True, max_occurrences=2)[1] == [b, b, z, c, c]
    assert followed(msg, page_fp, True, max_occurrences=5)[1] == [b, b, b, z, c, c]
    assert followed(msg, page_fp, False, max_occurrences=5)[1] == [b, b, b, c, c]
    keys, urls = followed(msg, page_fp, True, max_occurrences=5)
    assert keys == normalized_fingerprints(urls)
    from_links = pb.PageLinks(url=PAGE, links=list(msg.links))  # no lists: read from the links, counts alike
    assert followed(from_links, page_fp, True, max_occurrences=5) == (keys, urls)


def test_without_repeated_links_no_counts_are_written_and_each_link_is_one_share() -> None:
    msg = page_links([pb.Link(url="https://a.example/b", link_class=INTERNAL),
                      pb.Link(url="https://z.example/", link_class=EXTERNAL)])
    fill_followed(msg)
    assert list(msg.followed_counts) == []
    assert followed(msg, url_fingerprint(PAGE), True, max_occurrences=4)[1] == ["https://a.example/b",
                                                                                 "https://z.example/"]


def test_counts_of_another_length_than_the_lists_are_refused() -> None:
    msg = pb.PageLinks(url=PAGE, followed_urls=["https://b.example/"], followed_external=[True],
                       followed_fingerprints=[url_fingerprint("https://b.example/")], followed_counts=[2, 1])
    with pytest.raises(ValueError, match="different lengths"):
        followed(msg, url_fingerprint(PAGE), True, max_occurrences=2)
