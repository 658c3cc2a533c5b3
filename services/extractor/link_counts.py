"""A crawled page's links counted by class: the message the scheduler credits to a crawl goal's site.

The extractor classifies each link by registered domain (internal: the page's own, external:
another, bad: not followable). The counts travel on ``trawl.page-link-counts`` keyed by host,
so the scheduler partition that owns the page's host credits them (a page's external links
are its reward under the crawl goal ``external_links``) without reading the page links.
"""

from __future__ import annotations

from libs.common.wire import messages as pb


def link_counts(links: pb.PageLinks) -> pb.PageLinkCounts:
    """The counts of ``links``' distinct links per class (nofollow links count)."""
    internal = external = bad = 0
    for link in links.links:
        if link.link_class == pb.LINK_CLASS_EXTERNAL:
            external += 1
        elif link.link_class == pb.LINK_CLASS_INTERNAL:
            internal += 1
        else:
            bad += 1
    return pb.PageLinkCounts(url=links.url, host=links.host, fetched_at_ms=links.fetched_at_ms,
                             internal_links=internal, external_links=external, bad_links=bad)
