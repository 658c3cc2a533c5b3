"""Sitemaps listed in robots.txt become discovered URLs.

When robots.txt of an origin is (re)loaded and lists ``Sitemap:`` lines,
:class:`SitemapReader` fetches those on the same host in the background,
through the host's politeness slot like any request, follows sitemap indexes
(at most ``max_depth`` levels and ``max_sitemaps`` files per load), and hands
the page URLs it finds (http(s), same host, at most ``max_urls``) to
``publish``. Sitemaps may be gzip files (``.xml.gz``); their decoded size is
capped at 50 MiB, the protocol's limit. XML is parsed with lxml with entity
resolution and network access off. Sitemaps on other hosts are skipped: their
host belongs to another fetcher's partition and politeness.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from lxml import etree
from yarl import URL

from services.fetcher.http_response import HttpResponse
from services.fetcher.robots import RobotsPolicy

logger = logging.getLogger(__name__)

__all__ = ["MAX_SITEMAP_BYTES", "SitemapContent", "SitemapReader", "parse_sitemap"]

MAX_SITEMAP_BYTES = 50 * 1024 * 1024
"""Largest decoded sitemap read (the sitemaps.org limit)."""

FetchFn = Callable[[str], Awaitable[HttpResponse]]
"""A polite fetch of one sitemap URL (any content type kept)."""
PublishFn = Callable[[str, list[str]], None]
"""Called with a sitemap URL and page URLs found in it."""


@dataclass(frozen=True)
class SitemapContent:
    """Page URLs (``<urlset>``) and nested sitemap URLs (``<sitemapindex>``) of one sitemap file."""

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(31)
    try:
        return inflater.decompress(body, limit)
    except zlib.error:
        return b""


def parse_sitemap(body: bytes, max_urls: int) -> SitemapContent:
    """The ``<loc>`` entries of a sitemap or sitemap index (gzip accepted); malformed XML gives what parsed."""
    if body[:2] == b"\x1f\x8b":
        body = _gunzip(body, MAX_SITEMAP_BYTES)
    content = SitemapContent()
    if not body.strip():
        return content
    parser = etree.XMLPullParser(
        events=("end",), resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
    )
    try:
        for start in range(0, len(body), 64 * 1024):
            parser.feed(body[start:start + 64 * 1024])
            if _collect(parser, content, max_urls):
                break
        parser.close()
    except etree.XMLSyntaxError:
        pass
    _collect(parser, content, max_urls)
    return content


def _collect(parser: etree.XMLPullParser, content: SitemapContent, max_urls: int) -> bool:
    """Take the ``<loc>`` elements parsed so far; True once ``max_urls`` page URLs are taken."""
    for _event, element in parser.read_events():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag.rsplit("}", 1)[-1] != "loc":
            if tag.rsplit("}", 1)[-1] in ("url", "sitemap"):
                element.clear()
            continue
        text = (element.text or "").strip()
        parent = element.getparent()
        kind = parent.tag.rsplit("}", 1)[-1] if parent is not None and isinstance(parent.tag, str) else ""
        if text and kind == "sitemap":
            content.sitemaps.append(text)
        elif text and len(content.urls) < max_urls:
            content.urls.append(text)
        if len(content.urls) >= max_urls:
            return True
    return False


def _same_host(url: str, host: str) -> bool:
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return False
    return parsed.scheme in ("http", "https") and (parsed.raw_host or "").lower() == host


class SitemapReader:
    """Reads the sitemaps of origins whose robots.txt was just loaded (see the module docstring)."""

    def __init__(
        self,
        fetch: FetchFn,
        publish: PublishFn,
        *,
        max_urls: int = 50_000,
        max_sitemaps: int = 20,
        max_depth: int = 2,
    ) -> None:
        self._fetch = fetch
        self._publish = publish
        self._max_urls = max_urls
        self._max_sitemaps = max_sitemaps
        self._max_depth = max_depth
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.urls_found = 0
        self.sitemaps_read = 0

    def robots_loaded(self, policy: RobotsPolicy) -> None:
        """Start reading the sitemaps ``policy`` lists, unless that origin's are being read already."""
        if not policy.sitemaps or policy.origin in self._tasks:
            return
        origin = policy.origin
        task = asyncio.get_running_loop().create_task(self._read_all(origin, policy.sitemaps))
        self._tasks[origin] = task

        def done(_task: asyncio.Task[None]) -> None:
            self._tasks.pop(origin, None)

        task.add_done_callback(done)

    async def start(self) -> None:
        """Nothing to start: reads begin when robots.txt files are loaded."""

    async def stop(self) -> None:
        """Cancel the reads under way."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    async def _read_all(self, origin: str, listed: list[str]) -> None:
        host = (URL(origin).raw_host or "").lower()
        pending = [(url, 0) for url in listed if _same_host(url, host)]
        seen: set[str] = set()
        found = 0
        try:
            while pending and len(seen) < self._max_sitemaps and found < self._max_urls:
                url, depth = pending.pop(0)
                if url in seen:
                    continue
                seen.add(url)
                response = await self._fetch(url)
                self.sitemaps_read += 1
                if response.status != 200:
                    logger.info("sitemap %s: %s", url, response.error or f"status {response.status}")
                    continue
                content = parse_sitemap(response.body, self._max_urls - found)
                urls = [u for u in content.urls if _same_host(u, host)]
                if urls:
                    found += len(urls)
                    self.urls_found += len(urls)
                    self._publish(url, urls)
                if depth + 1 <= self._max_depth:
                    pending.extend((u, depth + 1) for u in content.sitemaps if _same_host(u, host))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a politeness refusal (host parked, released) ends this host's read
            logger.info("sitemaps of %s not read: %s", origin, exc)
