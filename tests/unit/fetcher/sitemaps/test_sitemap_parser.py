"""One sitemap file parsed incrementally: every limit stops it with its reason, nothing is built in memory."""

from __future__ import annotations

import gzip
import threading
import zlib

from services.fetcher.sitemaps.sitemap_parser import MAX_LOC_CHARS, SitemapLimits, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
MiB = 1024 * 1024


def urlset(*urls: str) -> bytes:
    return (f'<?xml version="1.0"?><urlset {NS}>'
            + "".join(f"<url><loc>{u}</loc><lastmod>2026-01-01</lastmod><priority>0.5</priority></url>" for u in urls)
            + "</urlset>").encode()


def element_bomb(decoded: int = 52 * MiB) -> bytes:
    """53 KB of gzip: two URLs, then ``decoded`` bytes of empty elements."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(urlset("http://a.test/1", "http://a.test/2")[:-len(b"</urlset>")])]
    block = b"<a/>" * (256 * 1024)
    parts += [compressor.compress(block) for _ in range(decoded // len(block))]
    return b"".join([*parts, compressor.compress(b"</urlset>"), compressor.flush()])


def test_a_file_read_to_its_end_has_no_cut() -> None:
    content = parse_sitemap(urlset(*(f"http://a.test/{i}" for i in range(1000))))
    assert content.cut == "" and len(content.urls) == 1000
    assert content.elements == 1 + 4 * 1000 and content.decoded_bytes == len(urlset(*(f"http://a.test/{i}"
                                                                                     for i in range(1000))))


def test_the_element_limit_stops_an_element_bomb_early() -> None:
    bomb = element_bomb()
    assert len(bomb) < 60_000
    content = parse_sitemap(bomb, SitemapLimits(max_elements=100_000))
    assert content.cut == "elements" and content.urls == ["http://a.test/1", "http://a.test/2"]
    assert 100_000 < content.elements < 100_000 + 64 * 1024 // 4 + 16  # checked between chunks of 64 KiB
    assert content.decoded_bytes < 2 * MiB


def test_the_decoded_size_limit_stops_a_compression_bomb() -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = compressor.compress(urlset("http://a.test/1")[:-9] + b"<!-- " + b" " * (8 * MiB)) + compressor.flush()
    content = parse_sitemap(body, SitemapLimits(max_decoded_bytes=1 * MiB))
    assert content.cut == "decoded_bytes" and content.decoded_bytes == MiB and content.urls == ["http://a.test/1"]
    plain = urlset(*(f"http://a.test/{i}" for i in range(20_000)))  # not compressed: the same limit
    cut = parse_sitemap(plain, SitemapLimits(max_decoded_bytes=100_000))
    assert cut.cut == "decoded_bytes" and 0 < len(cut.urls) < 20_000
    exact = parse_sitemap(plain, SitemapLimits(max_decoded_bytes=len(plain)))
    assert exact.cut == "" and len(exact.urls) == 20_000


def test_a_file_of_exactly_the_limits_is_read_to_its_end() -> None:
    body = urlset(*(f"http://a.test/{i}" for i in range(10)))
    content = parse_sitemap(body, SitemapLimits(max_elements=41, max_urls=10))
    assert content.cut == "" and content.elements == 41 and len(content.urls) == 10


def test_index_children_are_capped() -> None:
    index = (f'<sitemapindex {NS}>' + "".join(f"<sitemap><loc>http://a.test/s{i}.xml</loc></sitemap>"
                                               for i in range(50)) + "</sitemapindex>").encode()
    content = parse_sitemap(index, SitemapLimits(max_index_children=10))
    assert content.cut == "index_children" and len(content.sitemaps) == 10 and content.urls == []


def test_overlong_locs_are_skipped_and_text_elsewhere_is_not_kept() -> None:
    body = urlset("http://a.test/" + "x" * MAX_LOC_CHARS, "http://a.test/short").replace(
        b"<lastmod>", b"<lastmod>" + b"t" * 100_000, 1)
    content = parse_sitemap(body)
    assert content.urls == ["http://a.test/short"] and content.cut == ""


def test_corrupt_gzip_and_empty_bodies() -> None:
    good = gzip.compress(urlset("http://a.test/1", "http://a.test/2"))
    truncated = parse_sitemap(good[: len(good) // 2 + 20])
    assert truncated.urls in ([], ["http://a.test/1"], ["http://a.test/1", "http://a.test/2"])
    assert parse_sitemap(b"\x1f\x8b not gzip").urls == []
    assert parse_sitemap(b"").cut == "" and parse_sitemap(b"  \n").cut == ""


def test_a_stop_ends_the_read_between_chunks() -> None:
    stop = threading.Event()
    stop.set()
    content = parse_sitemap(element_bomb(), stop=stop)
    assert content.cut == "stopped" and content.elements == 0
