"""Seeds, host summaries and a site's external links on the real PostgreSQL server."""

from __future__ import annotations

from typing import Any

import pytest

from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.topics import FETCH_OUTCOMES, PAGE_LINKS
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.sites import BadSiteToken, SiteBook, SiteRequest
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration


def _page(url: str, links: list[pb.Link]) -> Record[Any]:
    return Record(PAGE_LINKS, 0, 0, "", pb.PageLinks(url=url, depth=0, links=links, fetched_at_ms=1), 1, None, None)


def _external(url: str, anchor: str, *, nofollow: bool = False) -> pb.Link:
    return pb.Link(url=url, anchor=anchor, link_class=pb.LINK_CLASS_EXTERNAL, nofollow=nofollow,
                   context=f"read {anchor} today")


async def _site_links(book: SiteBook, site: str, size: int = 2, **filters: Any) -> list[lb_pb.GraphLink]:
    links: list[lb_pb.GraphLink] = []
    token = ""
    while True:
        request = SiteRequest(site, size, token, filters.get("target_domain", ""), filters.get("anchor", ""),
                              filters.get("followable_only", False))
        found = await book.external_links(request)
        assert found is not None
        page, token = found
        assert len(page) <= size
        links.extend(page)
        if not token:
            return links


async def test_seed_sites_summaries_and_external_links(linkbase_db: Database) -> None:
    book = SiteBook(linkbase_db)
    reply = await book.add_sites([lb_pb.Site(name="Uni A", short_name="ua", start_url="HTTP://Uni.test"),
                                  lb_pb.Site(name="Broken", start_url="javascript:void(0)")])
    assert reply.accepted == 1 and [r.reason for r in reply.rejected] == ["unsupported_scheme:javascript"]
    store = LinkStore(linkbase_db)
    await store.write(build_batch([
        _page("http://uni.test/", [_external("http://lab.org/", "Lab"), _external("http://b.net/x", "B", nofollow=True),
                                   pb.Link(url="http://uni.test/p", link_class=pb.LINK_CLASS_INTERNAL),
                                   pb.Link(url="mailto:x", link_class=pb.LINK_CLASS_BAD, bad_reason="scheme")]),
        _page("http://www.uni.test/", [_external("http://lab.org/y", "Lab Y"), _external("http://c.net/", "C")]),
        Record(FETCH_OUTCOMES, 0, 0, "", pb.FetchOutcome(request_id="r", url="http://www.uni.test/",
                                                         status=pb.FETCH_STATUS_NETWORK_ERROR, fetched_at_ms=5),
               5, None, None),
    ]))
    summary = await book.host_summary("uni.test")
    assert summary is not None
    assert (summary.seed.name, summary.seed.short_name, summary.seed.start_url) == ("Uni A", "ua", "http://uni.test/")
    assert (summary.internal_links, summary.external_links, summary.bad_links, summary.available) == (1, 2, 1, True)
    www = await book.host_summary("www.uni.test")
    assert www is not None and not www.available and www.availability_at_ms == 5 and not www.HasField("seed")
    assert await book.host_summary("never.test") is None

    whole_site = await _site_links(book, "uni.test")
    assert sorted(link.target_url for link in whole_site) == [
        "http://b.net/x", "http://c.net/", "http://lab.org/", "http://lab.org/y"]
    assert {link.context for link in whole_site} >= {"read Lab today"}
    one_host = await _site_links(book, "www.uni.test", size=10)
    assert sorted(link.target_url for link in one_host) == ["http://c.net/", "http://lab.org/y"]
    to_lab = await _site_links(book, "uni.test", target_domain="lab.org")
    assert sorted(link.anchor for link in to_lab) == ["Lab", "Lab Y"]
    assert [link.anchor for link in await _site_links(book, "uni.test", anchor="c tod")] == ["C"]
    assert "http://b.net/x" not in {link.target_url for link in await _site_links(book, "uni.test",
                                                                                   followable_only=True)}
    assert await book.external_links(SiteRequest("never.test", 10, "", "", "", False)) is None
    with pytest.raises(BadSiteToken):
        await book.external_links(SiteRequest("uni.test", 10, "nonsense", "", "", False))
