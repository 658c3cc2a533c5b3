"""Sitemaps listed in robots.txt become discovered URLs.

When robots.txt of an origin is (re)loaded and lists ``Sitemap:`` lines,
:class:`SitemapReader` fetches those on the same host in the background,
through the host's politeness slot like any request, follows sitemap indexes
(at most ``max_depth`` levels and ``max_sitemaps`` files per load), and hands
the page URLs it finds (http(s), same host, at most ``max_urls`` per load) to
``publish``. Sitemaps on other hosts are skipped: their host belongs to another
fetcher's partition and politeness.

Each file is parsed off the event loop, in a thread of the reader's own (one
file at a time, over all hosts), incrementally and without building a tree
(:mod:`services.fetcher.sitemaps.sitemap_parser`), within :class:`SitemapLimits`: decoded
bytes, elements, page URLs per file, sitemaps per index. Every limit reached,
per file or per host (``host_urls``, ``index_depth``, ``sitemaps_per_host``), is
logged once with the URL and counted in ``trawl_fetcher_sitemap_cuts_total`` by
reason; a file cut for its decoded size or its elements (a compression or
element bomb) ends the read of that host's sitemaps. At most
:data:`FILES_IN_HAND` files are being fetched or parsed at once, over all hosts,
so the bodies waiting for the parsing thread are bounded too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import Counter
from yarl import URL

from services.fetcher.http.http_response import HttpResponse
from services.fetcher.robots.robots import RobotsPolicy
from services.fetcher.settings import FetcherSettings
from services.fetcher.sitemaps.sitemap_parser import (
    CUT_DECODED_BYTES,
    CUT_ELEMENTS,
    CUT_INDEX_CHILDREN,
    CUT_MALFORMED,
    CUT_STOPPED,
    CUT_URLS_PER_FILE,
    MAX_SITEMAP_BYTES,
    SitemapContent,
    SitemapLimits,
    parse_sitemap,
)

logger = logging.getLogger(__name__)

__all__ = [
    "CUT_HOST_SITEMAPS",
    "CUT_HOST_URLS",
    "CUT_INDEX_DEPTH",
    "MAX_SITEMAP_BYTES",
    "SITEMAP_CUTS",
    "SitemapContent",
    "SitemapLimits",
    "SitemapReader",
    "parse_sitemap",
    "sitemap_reader",
]

# Why a host's sitemaps were not all read (besides the per-file reasons of sitemap_parser).
CUT_HOST_URLS = "host_urls"
CUT_INDEX_DEPTH = "index_depth"
CUT_HOST_SITEMAPS = "sitemaps_per_host"
FILES_IN_HAND = 4
"""Sitemap files fetched and not yet parsed, at most (each body is at most the fetcher's body cap)."""
HOSTILE_CUTS = frozenset({CUT_DECODED_BYTES, CUT_ELEMENTS})
"""Cuts after which the rest of the host's sitemaps is not read."""

SITEMAP_CUTS = Counter(
    "trawl_fetcher_sitemap_cuts_total",
    "Sitemap files or hosts' sitemap reads cut short, by reason (a limit reached, or malformed XML).",
    ["reason"],
)
for _reason in (CUT_DECODED_BYTES, CUT_ELEMENTS, CUT_URLS_PER_FILE, CUT_INDEX_CHILDREN, CUT_MALFORMED,
                CUT_HOST_SITEMAPS, CUT_INDEX_DEPTH, CUT_HOST_URLS):  # at zero before the first one
    SITEMAP_CUTS.labels(_reason)

FetchFn = Callable[[str], Awaitable[HttpResponse]]
"""A polite fetch of one sitemap URL (any content type kept)."""
PublishFn = Callable[[str, list[str]], None]
"""Called with a sitemap URL and page URLs found in it."""


def _same_host(url: str, host: str) -> bool:
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return False
    return parsed.scheme in ("http", "https") and (parsed.raw_host or "").lower() == host


def sitemap_reader(settings: FetcherSettings, fetch: FetchFn, publish: PublishFn) -> SitemapReader:
    """A :class:`SitemapReader` with the limits of ``settings``."""
    limits = SitemapLimits(
        max_decoded_bytes=settings.sitemap_max_decoded_bytes,
        max_elements=settings.sitemap_max_elements,
        max_urls=settings.sitemap_max_urls_per_file,
        max_index_children=settings.sitemap_max_index_children,
    )
    return SitemapReader(fetch, publish, max_urls=settings.sitemap_max_urls, max_sitemaps=settings.sitemap_max_files,
                         max_depth=settings.sitemap_max_depth, limits=limits)


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
        limits: SitemapLimits | None = None,
    ) -> None:
        self._fetch = fetch
        self._publish = publish
        self._max_urls = max_urls
        self._max_sitemaps = max_sitemaps
        self._max_depth = max_depth
        self._limits = limits or SitemapLimits()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._stopping = threading.Event()
        self._in_hand = asyncio.Semaphore(FILES_IN_HAND)
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
        """Nothing to start: reads begin when robots.txt files are loaded (the parsing thread with the first)."""
        self._stopping.clear()

    async def stop(self) -> None:
        """Cancel the reads under way; a file being parsed stops at its next chunk."""
        self._stopping.set()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    async def wait_idle(self) -> None:
        """Return once no read is under way (reads that robots.txt loads start meanwhile included)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks.values()))
            await asyncio.sleep(0)  # the finished reads' callbacks take them off the list

    async def parse(self, body: bytes, limits: SitemapLimits) -> SitemapContent:
        """``body`` parsed within ``limits`` in the reader's thread (the event loop goes on meanwhile)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemaps")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, parse_sitemap, body, limits, self._stopping)

    async def _read_all(self, origin: str, listed: list[str]) -> None:
        host = (URL(origin).raw_host or "").lower()
        pending = [(url, 0) for url in listed if _same_host(url, host)]
        seen: set[str] = set()
        found = 0
        last = ""
        cut_at_budget = False  # the last file was cut by the host's URL budget
        try:
            while pending and found < self._max_urls:
                url, depth = pending.pop(0)
                if url in seen:
                    continue
                if len(seen) >= self._max_sitemaps:
                    _cut(url, CUT_HOST_SITEMAPS, f"{self._max_sitemaps} files read for {origin}")
                    return
                seen.add(url)
                room = self._max_urls - found
                limits = dataclasses.replace(self._limits, max_urls=min(self._limits.max_urls, room))
                async with self._in_hand:
                    response = await self._fetch(url)
                    self.sitemaps_read += 1
                    if response.status != 200:
                        logger.info("sitemap %s: %s", url, response.error or f"status {response.status}")
                        continue
                    content = await self.parse(response.body, limits)
                    del response  # the body, before the next file is fetched
                urls = [u for u in content.urls if _same_host(u, host)]
                if urls:
                    found += len(urls)
                    self.urls_found += len(urls)
                    self._publish(url, urls)
                if content.cut == CUT_STOPPED:
                    return
                last = url
                if content.cut == CUT_URLS_PER_FILE and found >= self._max_urls:
                    cut_at_budget = True  # the host's budget, not the file's
                    break
                if content.cut:
                    _cut(url, content.cut, f"{content.decoded_bytes} bytes, {content.elements} elements read")
                if content.cut in HOSTILE_CUTS:
                    if pending:
                        logger.warning("the %d other sitemaps of %s are not read", len(pending), origin)
                    return
                nested = [u for u in content.sitemaps if _same_host(u, host)]
                if nested and depth + 1 > self._max_depth:
                    _cut(url, CUT_INDEX_DEPTH, f"an index {depth} levels deep, {len(nested)} sitemaps not read")
                elif nested:
                    pending.extend((u, depth + 1) for u in nested)
            if found >= self._max_urls and (pending or cut_at_budget):
                _cut(last, CUT_HOST_URLS, f"{self._max_urls} URLs taken from the sitemaps of {origin}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a politeness refusal (host parked, released) ends this host's read
            logger.info("sitemaps of %s not read: %s", origin, exc)


def _cut(url: str, reason: str, detail: str) -> None:
    """Record a limit reached while reading the sitemap at ``url``: logged once, counted by reason."""
    SITEMAP_CUTS.labels(reason).inc()
    logger.warning("sitemap %s not read to its end (%s): %s", url, reason, detail,
                   extra={"url": url, "reason": reason})
