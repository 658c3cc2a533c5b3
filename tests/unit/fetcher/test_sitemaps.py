"""Sitemaps named in robots.txt: parsed safely, read politely, their URLs published as discoveries."""

from __future__ import annotations

import gzip
import itertools

from aiohttp import web

from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.politeness import HostPoliteness
from services.fetcher.robots import RobotsCache
from services.fetcher.sitemaps import SitemapReader, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str) -> bytes:
    return (f'<?xml version="1.0"?><urlset {NS}>'
            + "".join(f"<url><loc> {u} </loc><lastmod>2026-01-01</lastmod></url>" for u in urls)
            + "</urlset>").encode()


def test_urlset_index_gzip_and_limits() -> None:
    assert parse_sitemap(urlset("http://a.test/1", "http://a.test/2"), 10).urls == ["http://a.test/1", "http://a.test/2"]
    index = f'<sitemapindex {NS}><sitemap><loc>http://a.test/s2.xml</loc></sitemap></sitemapindex>'.encode()
    parsed = parse_sitemap(index, 10)
    assert parsed.sitemaps == ["http://a.test/s2.xml"] and parsed.urls == []
    assert parse_sitemap(gzip.compress(urlset("http://a.test/z")), 10).urls == ["http://a.test/z"]
    assert len(parse_sitemap(urlset(*(f"http://a.test/{i}" for i in range(100))), 7).urls) == 7
    assert parse_sitemap(b"<urlset><url><loc>http://a.test/ok</loc></url><url><loc>broken", 10).urls == [
        "http://a.test/ok"]
    assert parse_sitemap(b"not xml at all", 10).urls == []


def test_entities_are_not_expanded() -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
            b"<urlset><url><loc>http://a.test/&c;</loc></url></urlset>")
    urls = parse_sitemap(bomb, 10).urls
    assert all(len(u) < 100 for u in urls)


async def test_sitemaps_in_robots_txt_are_read_politely_and_published(serve, make_fetcher) -> None:
    published: list[tuple[str, list[str]]] = []
    app = web.Application()
    holder: dict[str, int] = {}

    def origin() -> str:
        return f"http://127.0.0.1:{holder['port']}"

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text=f"User-agent: *\nDisallow:\nSitemap: {origin()}/index.xml\n"
                                 "Sitemap: http://elsewhere.test/sitemap.xml\n")

    async def index(request: web.Request) -> web.Response:
        body = f'<sitemapindex {NS}><sitemap><loc>{origin()}/pages.xml.gz</loc></sitemap></sitemapindex>'
        return web.Response(body=body.encode(), content_type="application/xml")

    async def pages(request: web.Request) -> web.Response:
        body = gzip.compress(urlset(f"{origin()}/a", f"{origin()}/b", "http://elsewhere.test/c"))
        return web.Response(body=body, content_type="application/x-gzip")

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<p>hi</p>", content_type="text/html")

    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/index.xml", index)
    app.router.add_get("/pages.xml.gz", pages)
    app.router.add_get("/", page)
    server = await serve(app)
    holder["port"] = server.port
    clock = SystemClock()
    http = await make_fetcher(clock=clock)
    politeness = HostPoliteness(clock, min_delay=0.05, max_crawl_delay=1, response_time_factor=0,
                                max_backoff=1, park_after_failures=3)
    fetch = polite_robots_fetch(http, politeness)
    reader = SitemapReader(fetch, lambda sitemap, urls: published.append((sitemap, urls)))
    robots_cache = RobotsCache(fetch, user_agent_token="trawl", clock=clock, on_loaded=reader.robots_loaded)
    core = FetchCore(http, robots_cache, politeness, clock)
    assert (await core.fetch(server.url("/"))).outcome == "ok"
    while reader._tasks:  # the read runs in the background
        await next(iter(reader._tasks.values()))
    assert published == [(f"{origin()}/pages.xml.gz", [f"{origin()}/a", f"{origin()}/b"])]
    paths = server.paths()
    assert paths[0] == "/robots.txt" and sorted(paths) == ["/", "/index.xml", "/pages.xml.gz", "/robots.txt"]
    assert paths.index("/index.xml") < paths.index("/pages.xml.gz")
    starts = [r.at for r in server.requests]
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(starts))  # one host, one gap
    await reader.stop()
