"""Sitemaps named in robots.txt: parsed safely, read politely, their URLs published as discoveries."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import itertools
import logging
import time
import zlib
from typing import Any

import pytest
from aiohttp import web

from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.settings import FetcherSettings
from services.fetcher.sitemaps.sitemap_parser import MAX_LOC_CHARS, MAX_SITEMAP_BYTES, SitemapLimits, parse_sitemap
from services.fetcher.sitemaps.sitemaps import FILES_IN_HAND, SITEMAP_CUTS, SitemapReader, sitemap_reader
from tests.unit.fetcher.loop_watch import watching_loop

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
MiB = 1024 * 1024


def urlset(*urls: str) -> bytes:
    return (f'<?xml version="1.0"?><urlset {NS}>'
            + "".join(f"<url><loc> {u} </loc><lastmod>2026-01-01</lastmod></url>" for u in urls)
            + "</urlset>").encode()


def test_urlset_index_gzip_and_limits() -> None:
    assert parse_sitemap(urlset("http://a.test/1", "http://a.test/2")).urls == ["http://a.test/1", "http://a.test/2"]
    index = f'<sitemapindex {NS}><sitemap><loc>http://a.test/s2.xml</loc></sitemap></sitemapindex>'.encode()
    parsed = parse_sitemap(index)
    assert parsed.sitemaps == ["http://a.test/s2.xml"] and parsed.urls == [] and parsed.cut == ""
    assert parse_sitemap(gzip.compress(urlset("http://a.test/z"))).urls == ["http://a.test/z"]
    seven = parse_sitemap(urlset(*(f"http://a.test/{i}" for i in range(100))), SitemapLimits(max_urls=7))
    assert len(seven.urls) == 7 and seven.cut == "urls_per_file"
    broken = parse_sitemap(b"<urlset><url><loc>http://a.test/ok</loc></url><url><loc>broken")
    assert broken.urls == ["http://a.test/ok"] and broken.cut == "malformed"
    assert parse_sitemap(b"not xml at all").urls == []


def test_entity_expansion_is_bounded() -> None:
    """Entities are not resolved from outside; internal ones are bounded by libxml2 and the loc cap."""
    small = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
             b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
             b"<urlset><url><loc>http://a.test/&c;</loc></url></urlset>")
    assert all(len(u) <= MAX_LOC_CHARS for u in parse_sitemap(small).urls)
    levels = '<!ENTITY a0 "aaaaaaaaaa">' + "".join(f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10))
    laughs = (f'<?xml version="1.0"?><!DOCTYPE l [{levels}]>'
              "<urlset><url><loc>http://a.test/&a9;</loc></url></urlset>").encode()
    parsed = parse_sitemap(laughs)  # a billion laughs: refused by the parser, nothing taken
    assert parsed.urls == [] and parsed.cut == "malformed"


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
    await reader.wait_idle()  # the reads run in the background
    assert published == [(f"{origin()}/pages.xml.gz", [f"{origin()}/a", f"{origin()}/b"])]
    paths = server.paths()
    assert paths[0] == "/robots.txt" and sorted(paths) == ["/", "/index.xml", "/pages.xml.gz", "/robots.txt"]
    assert paths.index("/index.xml") < paths.index("/pages.xml.gz")
    starts = [r.at for r in server.requests]
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(starts))  # one host, one gap
    await reader.stop()


def element_bomb(origin: str) -> bytes:
    """53 KB of gzip inflating to 52 MiB: two page URLs, then 13 million empty elements."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(urlset(f"{origin}/1", f"{origin}/2")[:-len(b"</urlset>")])]
    parts += [compressor.compress(b"<a/>" * (256 * 1024)) for _ in range(52 * 4)]
    return b"".join([*parts, compressor.compress(b"</urlset>"), compressor.flush()])


def sitemap_index(*urls: str) -> bytes:
    return (f"<sitemapindex {NS}>" + "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
            + "</sitemapindex>").encode()


class Site:
    """A host's robots.txt and sitemaps served from memory; ``fetched`` lists the paths asked for."""

    origin = "http://a.test"

    def __init__(self, files: dict[str, bytes], listed: str = "/sitemap.xml", origin: str = "") -> None:
        self.origin = origin or self.origin
        self.files = {"/robots.txt": f"User-agent: *\nSitemap: {self.origin}{listed}\n".encode(), **files}
        self.fetched: list[str] = []
        self.published: list[tuple[str, list[str]]] = []

    async def fetch(self, url: str) -> HttpResponse:
        path = url[len(self.origin):]
        self.fetched.append(path)
        body = self.files.get(path)
        return HttpResponse(url, url, 200 if body is not None else 404, body=body or b"")

    async def read(self, reader: SitemapReader) -> None:
        robots = RobotsCache(self.fetch, user_agent_token="trawl", clock=SystemClock(), on_loaded=reader.robots_loaded)
        await robots.policy(self.origin)
        await reader.wait_idle()  # the reads run in the background

    def reader(self, **kwargs: Any) -> SitemapReader:
        return SitemapReader(self.fetch, lambda sitemap, urls: self.published.append((sitemap, urls)), **kwargs)


def cuts(reason: str) -> float:
    return SITEMAP_CUTS.labels(reason)._value.get()


async def test_a_sitemap_bomb_is_parsed_off_the_event_loop_in_little_memory(caplog: pytest.LogCaptureFixture) -> None:
    """The 53 KB gzip of 52 MiB of elements that took a fetcher to 1.7 GB and blocked its loop for 11-17 s."""
    site = Site({"/sitemap.xml.gz": element_bomb(Site.origin)}, "/sitemap.xml.gz")
    reader = site.reader()
    elements_cut = cuts("elements")
    async with watching_loop() as watch:
        started = time.monotonic()
        with caplog.at_level(logging.INFO, "services.fetcher.sitemaps.sitemaps"):
            await site.read(reader)
        took = time.monotonic() - started
    await reader.stop()
    before, peak, gaps = watch.before, watch.peak, watch.gaps
    assert site.published == [(f"{Site.origin}/sitemap.xml.gz", [f"{Site.origin}/1", f"{Site.origin}/2"])]
    assert cuts("elements") == elements_cut + 1
    logged = [r.getMessage() for r in caplog.records if "/sitemap.xml.gz" in r.getMessage()]
    assert len(logged) == 1 and "(elements)" in logged[0], logged
    assert peak - before < 64 * MiB, f"resident set grew by {(peak - before) / MiB:.0f} MiB while parsing"
    assert len(gaps) >= 5 and max(gaps) < 0.5, f"{len(gaps)} ticks in {took:.2f}s, longest gap {max(gaps):.3f}s"


async def test_an_index_of_bombs_stops_at_the_first() -> None:
    bomb = element_bomb(Site.origin)
    files = {f"/bomb/{i}.xml.gz": bomb for i in range(1, 21)}
    site = Site({"/sitemap.xml": sitemap_index(*(f"{Site.origin}/bomb/{i}.xml.gz" for i in range(1, 21))), **files})
    reader = site.reader()
    await site.read(reader)
    await reader.stop()
    assert site.fetched == ["/robots.txt", "/sitemap.xml", "/bomb/1.xml.gz"]
    assert [sitemap for sitemap, _ in site.published] == [f"{Site.origin}/bomb/1.xml.gz"]


async def test_host_limits_are_counted_by_reason() -> None:
    o = Site.origin
    deep = Site({"/sitemap.xml": sitemap_index(f"{o}/i1.xml"), "/i1.xml": sitemap_index(f"{o}/i2.xml"),
                 "/i2.xml": urlset(f"{o}/deep")})
    depth_cut = cuts("index_depth")
    await deep.read(deep.reader(max_depth=1))
    assert deep.fetched == ["/robots.txt", "/sitemap.xml", "/i1.xml"] and cuts("index_depth") == depth_cut + 1

    many = Site({"/sitemap.xml": sitemap_index(*(f"{o}/s{i}.xml" for i in range(5))),
                 **{f"/s{i}.xml": urlset(f"{o}/p{i}") for i in range(5)}})
    files_cut = cuts("sitemaps_per_host")
    await many.read(many.reader(max_sitemaps=3))
    assert many.fetched == ["/robots.txt", "/sitemap.xml", "/s0.xml", "/s1.xml"]
    assert cuts("sitemaps_per_host") == files_cut + 1

    full = Site({"/sitemap.xml": sitemap_index(f"{o}/a.xml", f"{o}/b.xml", f"{o}/c.xml"),
                 "/a.xml": urlset(f"{o}/1", f"{o}/2"), "/b.xml": urlset(f"{o}/3", f"{o}/4"),
                 "/c.xml": urlset(f"{o}/5")})
    urls_cut = cuts("host_urls")
    await full.read(full.reader(max_urls=3))
    assert [u for _, urls in full.published for u in urls] == [f"{o}/1", f"{o}/2", f"{o}/3"]
    assert full.fetched == ["/robots.txt", "/sitemap.xml", "/a.xml", "/b.xml"] and cuts("host_urls") == urls_cut + 1

    wide = Site({"/sitemap.xml": sitemap_index(*(f"{o}/w{i}.xml" for i in range(5)))})
    children_cut = cuts("index_children")
    await wide.read(wide.reader(limits=SitemapLimits(max_index_children=2)))
    assert wide.fetched == ["/robots.txt", "/sitemap.xml", "/w0.xml", "/w1.xml"]
    assert cuts("index_children") == children_cut + 1


def test_the_settings_give_the_reader_its_limits() -> None:
    settings = dataclasses.replace(FetcherSettings(), sitemap_max_elements=7, sitemap_max_files=3)
    reader = sitemap_reader(settings, Site({}).fetch, lambda sitemap, urls: None)
    assert reader._limits.max_elements == 7 and reader._max_sitemaps == 3
    assert reader._limits.max_decoded_bytes == settings.sitemap_max_decoded_bytes == MAX_SITEMAP_BYTES


async def test_few_sitemap_files_are_in_hand_at_once_over_all_hosts() -> None:
    sites = [Site({"/sitemap.xml": urlset(f"http://h{i}.test/page")}, origin=f"http://h{i}.test") for i in range(12)]
    in_hand, most = 0, 0

    async def fetch(url: str) -> HttpResponse:
        nonlocal in_hand, most
        site = next(s for s in sites if url.startswith(s.origin + "/"))
        if url.endswith("/robots.txt"):
            return await site.fetch(url)
        in_hand += 1
        most = max(most, in_hand)
        await asyncio.sleep(0.02)
        in_hand -= 1
        return await site.fetch(url)

    published: list[str] = []
    reader = SitemapReader(fetch, lambda sitemap, urls: published.extend(urls))
    robots = RobotsCache(fetch, user_agent_token="trawl", clock=SystemClock(), on_loaded=reader.robots_loaded)
    await asyncio.gather(*(robots.policy(site.origin) for site in sites))
    await reader.wait_idle()  # the reads run in the background
    await reader.stop()
    assert sorted(published) == sorted(f"http://h{i}.test/page" for i in range(12))
    assert most == FILES_IN_HAND
