"""URLs the fetcher itself discovers, published on ``discovered-urls`` (keyed by host).

Two kinds: page URLs listed in a host's sitemaps (source ``SITEMAP``), and the URLs a
fetch was redirected through and to (source ``REDIRECT``): the fetcher follows redirects
within one fetch, and the extracted page is stored under the URL that was asked for, so
each hop and the final target are announced as URLs of their own, for the frontier to
know (and fetch, and judge as a duplicate) under their own names, as a crawler that does
not follow redirects inline would. A redirect the fetcher refused to follow (robots.txt
of the target) is announced the same way: the frontier records the target as blocked.

Every URL is put in normal form by :func:`libs.common.urls.normalize_url`, the one
normaliser of every entry point (seeds, links, redirects, sitemaps), before it is keyed by
its host; a URL that cannot be crawled is counted and dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from prometheus_client import Counter

from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DISCOVERED_URLS
from libs.common.url_keys import normalized_host
from libs.common.urls import InvalidUrl, normalize_url
from libs.common.wire import messages as pb
from services.fetcher.http.http_response import ERROR_DISALLOWED_REDIRECT, HttpResponse

log = logging.getLogger(__name__)

SITEMAP_URLS = Counter("trawl_fetcher_sitemap_urls_total", "URLs found in sitemaps and published as discoveries.")
REDIRECT_URLS = Counter("trawl_fetcher_redirect_urls_total", "Redirect hops and targets published as discoveries.")
INVALID_URLS = Counter(
    "trawl_fetcher_discovered_invalid_total", "URLs from sitemaps or redirects dropped as not crawlable.", ["source"]
)
for _source in (pb.DISCOVERY_SOURCE_SITEMAP, pb.DISCOVERY_SOURCE_REDIRECT):  # at zero before the first one
    INVALID_URLS.labels(pb.DiscoverySource.Name(_source))


def redirect_targets(response: HttpResponse) -> list[str]:
    """The URLs a fetch went through after the one asked for, as given (not normalised):
    the hops that redirected again, the final URL, and a target the fetch refused to follow."""
    urls = [*response.redirect_chain[1:]]
    if response.redirect_chain:
        urls.append(response.final_url)
    if response.error_code == ERROR_DISALLOWED_REDIRECT:
        urls.append(response.error.split(":", 1)[1])
    return urls


class DiscoveryPublisher:
    """Publishes sitemap and redirect discoveries through ``producer``."""

    def __init__(self, producer: TopicProducer) -> None:
        self._producer = producer

    def sitemap(self, sitemap_url: str, urls: list[str]) -> None:
        """The page URLs of one sitemap file (a :class:`~services.fetcher.sitemaps.sitemaps.SitemapReader` callback)."""
        SITEMAP_URLS.inc(self._publish(urls, sitemap_url, depth=1, source=pb.DISCOVERY_SOURCE_SITEMAP))

    def redirects(self, url: str, depth: int, response: HttpResponse) -> None:
        """The hops and target of ``url``'s redirects, at the depth of ``url`` (a redirect is not a link)."""
        targets = redirect_targets(response)
        if targets:
            REDIRECT_URLS.inc(self._publish(targets, url, depth=depth, source=pb.DISCOVERY_SOURCE_REDIRECT))

    def _publish(
        self, urls: Iterable[str], found_on: str, *, depth: int, source: pb.DiscoverySource.ValueType
    ) -> int:
        try:
            skip = normalize_url(found_on)
        except InvalidUrl:
            skip = found_on
        seen = {skip}
        now_ms = int(time.time() * 1000)
        sent = 0
        label = pb.DiscoverySource.Name(source)
        for raw in urls:
            try:
                url = normalize_url(raw)
            except InvalidUrl as exc:
                INVALID_URLS.labels(label).inc()
                log.debug("dropped discovered URL %r (%s)", raw[:200], exc.reason)
                continue
            if url in seen:
                continue
            seen.add(url)
            host = normalized_host(url)
            self._producer.send(DISCOVERED_URLS, host, pb.DiscoveredUrl(
                url=url, host=host, depth=depth, discovered_from=found_on, discovered_at_ms=now_ms, source=source,
            ))
            sent += 1
        return sent
