"""Hostile hosts whose robots.txt lists sitemaps that are bombs (see :mod:`libs.simweb.hostile`).

========================  ==================================================
host                      behaviour
========================  ==================================================
sitemap-bomb              robots.txt lists ``/sitemap.xml.gz``: 53 KB of gzip that inflates to
                          52 MiB, three page URLs (``/real/1`` .. ``/real/3``) and then 13 million
                          empty elements (``<a/>``)
sitemap-index-bomb        robots.txt lists ``/index.xml``, an index of 20 such files
                          (``/bomb/1.xml.gz`` .. ``/bomb/20.xml.gz``)
========================  ==================================================

Every other path is a small page.
"""

from __future__ import annotations

import logging
import zlib
from functools import cache

from aiohttp import web

logger = logging.getLogger(__name__)

__all__ = ["SITEMAP_BOMB_DECODED_BYTES", "SITEMAP_BOMB_FILES", "SITEMAP_PARTS", "hostile_sitemap", "sitemap_bomb"]

SITEMAP_PARTS = ("sitemap-bomb", "sitemap-index-bomb")
SITEMAP_BOMB_DECODED_BYTES = 52 * 1024 * 1024
"""The decoded size of one bomb (the sitemaps.org limit is 50 MiB)."""
SITEMAP_BOMB_FILES = 20
"""Files the index of ``sitemap-index-bomb`` lists."""
_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
_REAL_PAGES = 3


@cache
def sitemap_bomb(origin: str) -> bytes:
    """The gzip body of the bomb served at ``origin``; built from 1 MiB blocks (never whole in memory)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = f'<?xml version="1.0" encoding="UTF-8"?><urlset {_NS}>' + "".join(
        f"<url><loc>{origin}/real/{i}</loc></url>" for i in range(1, _REAL_PAGES + 1))
    parts = [compressor.compress(head.encode())]
    block = b"<a/>" * (256 * 1024)
    parts += [compressor.compress(block) for _ in range(SITEMAP_BOMB_DECODED_BYTES // len(block))]
    parts += [compressor.compress(b"</urlset>"), compressor.flush()]
    return b"".join(parts)


def _page(path: str) -> web.Response:
    return web.Response(text=f"<!doctype html><title>{path}</title><p>a page at {path}</p>\n", content_type="text/html")


def hostile_sitemap(part: str, origin: str, path: str) -> web.Response:
    """The answer of the host playing ``part`` (one of :data:`SITEMAP_PARTS`) at ``path``.

    ``origin`` is the scheme, host and port the request used (the sitemaps name URLs on it).
    """
    if part not in SITEMAP_PARTS:
        raise ValueError(f"no sitemap host plays {part!r}")
    if path == "/robots.txt":
        listed = "/sitemap.xml.gz" if part == "sitemap-bomb" else "/index.xml"
        return web.Response(text=f"User-agent: *\nDisallow:\nSitemap: {origin}{listed}\n", content_type="text/plain")
    if path == "/index.xml" and part == "sitemap-index-bomb":
        children = "".join(f"<sitemap><loc>{origin}/bomb/{i}.xml.gz</loc></sitemap>"
                           for i in range(1, SITEMAP_BOMB_FILES + 1))
        body = f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex {_NS}>{children}</sitemapindex>'
        return web.Response(text=body, content_type="application/xml")
    if path.endswith(".xml.gz"):
        return web.Response(body=sitemap_bomb(origin), content_type="application/x-gzip")
    return _page(path)
