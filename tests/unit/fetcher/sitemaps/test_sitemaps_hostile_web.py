"""Sitemap bombs on the simulated web: the fetcher's sitemap reader parses them in bounded memory, off its loop.

The hosts of :mod:`libs.simweb.hostile_sitemaps` list, in robots.txt, a 53 KB gzip sitemap
that inflates to 52 MiB of elements (which took a fetcher from 83 to 1,737 MiB and blocked
its event loop for 11-17 s) and an index of 20 of them. They are read the way the fetcher
reads them (robots.txt through the politeness slot, then the sitemaps in the background).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator

import pytest

from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb.hostile import HostileWeb, hostile_host
from libs.simweb.hostile_sitemaps import SITEMAP_BOMB_DECODED_BYTES, sitemap_bomb
from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http.http_client import HttpFetcher
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.sitemaps.sitemaps import SITEMAP_CUTS, SitemapReader
from tests.unit.fetcher.loop_watch import watching_loop

MiB = 1024 * 1024


@pytest.fixture
async def web() -> AsyncIterator[SimWebServer]:
    simulated = build_web(SimWebConfig(seed=1, hosts=2, pages=5, hub_host_ratio=0.0))
    server = SimWebServer(simulated, SimClock.frozen(simulated.start_time), hostile=HostileWeb())
    await server.start()
    yield server
    await server.stop()


class Crawl:
    """The fetcher's robots.txt and sitemap path against the simulated web (through it as a proxy)."""

    def __init__(self, web: SimWebServer) -> None:
        self.web = web
        self.published: list[tuple[str, list[str]]] = []
        clock = SystemClock()
        self.http = HttpFetcher(user_agent="trawl-test", connect_timeout=2, total_timeout=20,
                                max_body_bytes=2 * MiB, max_redirects=5, proxy=web.url)
        politeness = HostPoliteness(clock, min_delay=0.0, max_crawl_delay=1, response_time_factor=0,
                                    max_backoff=1, park_after_failures=3)
        fetch = polite_robots_fetch(self.http, politeness)
        self.reader = SitemapReader(fetch, lambda sitemap, urls: self.published.append((sitemap, urls)))
        robots = RobotsCache(fetch, user_agent_token="trawl", clock=clock, on_loaded=self.reader.robots_loaded)
        self.core = FetchCore(self.http, robots, politeness, clock)

    async def home_page_and_sitemaps(self, part: str) -> None:
        await self.http.start()
        try:
            assert (await self.core.fetch(f"http://{hostile_host(part)}/")).outcome == "ok"
            await self.reader.wait_idle()  # the reads run in the background
        finally:
            await self.reader.stop()
            await self.http.stop()

    def paths(self, part: str) -> list[str]:
        return [r.path for r in self.web.request_log if r.host == hostile_host(part)]


def test_the_bomb_is_small_and_inflates_past_the_sitemap_limit() -> None:
    body = sitemap_bomb("http://sitemap-bomb.hostile.test")
    inflater, size, data = zlib.decompressobj(31), 0, body
    while data:
        size += len(inflater.decompress(data, MiB))
        data = inflater.unconsumed_tail
    assert len(body) < 60_000 and size > 50 * MiB and size >= SITEMAP_BOMB_DECODED_BYTES


async def test_a_sitemap_bomb_keeps_the_loop_turning_and_memory_flat(web: SimWebServer) -> None:
    sitemap_bomb(f"http://{hostile_host('sitemap-bomb')}")  # built before measuring (the server's, not ours)
    crawl = Crawl(web)
    elements_cut = SITEMAP_CUTS.labels("elements")._value.get()
    async with watching_loop() as watch:
        await crawl.home_page_and_sitemaps("sitemap-bomb")
    before, peak, gaps = watch.before, watch.peak, watch.gaps
    origin = f"http://{hostile_host('sitemap-bomb')}"
    assert crawl.published == [(f"{origin}/sitemap.xml.gz", [f"{origin}/real/{i}" for i in (1, 2, 3)])]
    assert SITEMAP_CUTS.labels("elements")._value.get() == elements_cut + 1
    assert peak - before < 64 * MiB, f"resident set grew by {(peak - before) / MiB:.0f} MiB"
    assert max(gaps) < 0.5, f"the event loop stood still for {max(gaps):.2f}s"


async def test_an_index_of_twenty_bombs_costs_one(web: SimWebServer) -> None:
    crawl = Crawl(web)
    started = time.monotonic()
    await crawl.home_page_and_sitemaps("sitemap-index-bomb")
    assert sorted(crawl.paths("sitemap-index-bomb")) == ["/", "/bomb/1.xml.gz", "/index.xml", "/robots.txt"]
    assert [urls for _, urls in crawl.published] == [[f"http://{hostile_host('sitemap-index-bomb')}/real/{i}"
                                                     for i in (1, 2, 3)]]
    assert time.monotonic() - started < 20
