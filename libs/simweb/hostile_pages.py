"""Hostile hosts whose answers are well-formed HTTP but hostile HTML (see :mod:`libs.simweb.hostile`).

========================  ==================================================
host                      pages
========================  ==================================================
traps                     ``/``: one link into each spider trap (calendar far ahead, session id,
                          repeated segments, path depth, URL length) and one ordinary link
malformed-html            ``/deep`` (100,000 nested ``<div>``), ``/unclosed`` (a comment and a
                          script never closed), ``/nul`` (NUL and control bytes in the tags of
                          a page of text),
                          ``/soup`` (mis-nested tables, unquoted and duplicate attributes)
long-attributes           ``/attribute`` (a 1 MiB ``title``), ``/href`` (a 1 MiB ``href``)
idn                       ``/``: links to IDN homographs (Cyrillic letters in the registered
                          domain or a subdomain) and to a name IDNA forbids
flood                     ``/same-link`` (one link 50,000 times), ``/many-links`` (20,000
                          distinct links), ``/dense/N`` (2 MiB of distinct links, about
                          100,000), ``/copy/N`` (the same page at every N)
========================  ==================================================

Every link target is on ``.test`` hosts or ``.example`` names: nothing here leads off
the simulated web.
"""

from __future__ import annotations

import logging
from functools import cache

from aiohttp import web

logger = logging.getLogger(__name__)

__all__ = ["PAGE_PARTS", "hostile_page"]

PAGE_PARTS = ("traps", "malformed-html", "long-attributes", "idn", "flood")
MEGABYTE = 1024 * 1024
SAME_LINK_REPEATS = 50_000
DISTINCT_LINKS = 20_000
DEEP_NESTING = 100_000


def _html(body: str, title: str = "hostile page") -> str:
    return f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head><body>{body}</body></html>"


def _traps() -> str:
    segments = "/".join(f"s{i}" for i in range(20))
    links = [
        ("/calendar/2199/01/", "next month"),
        ("/shop?sessid=a1b2c3d4e5f6g7h8i9j0", "shop"),
        ("/a/b/a/b/a/b/", "again"),
        (f"/{segments}/", "deeper"),
        ("/search?q=" + "w" * 1500, "search"),
        ("/about", "about"),
    ]
    return _html("".join(f'<p>A paragraph of text about <a href="{href}">{text}</a>.</p>' for href, text in links))


def _malformed(path: str) -> bytes:
    if path == "/deep":
        return ("<html><body>" + "<div>" * DEEP_NESTING + '<a href="/deep-link">deep</a>').encode()
    if path == "/unclosed":
        return b'<html><body><p>before <a href="/before">before</a><script>var x = "<a href=/in-script>";' \
               b"<!-- the comment never ends <a href=/in-comment>x</a>"
    if path == "/nul":  # a handful of stray bytes in a page of text: damaged, not binary
        text = b"<p>" + b"Ordinary words around a few stray control bytes in the markup. " * 30 + b"</p>"
        tags = b'<ht\x00ml><bo\x01dy><p>text\x00 with\x1b controls <a hr\x00ef="/x">x</a><a href="/n\x00ul">nul</a>'
        return tags + text
    return (b"<table><tr><td><p><b><i>unclosed <a href=/soup-1 href=/duplicate>one</a><td></table></b>"
            b"<a href=/soup-2 class=a class=b title=unquoted>two</a></i><form><table><a href='/soup-3'>three")


def _long(path: str) -> str:
    if path == "/attribute":
        return _html(f'<a href="/short" title="{"t" * MEGABYTE}">a link with a long title</a>')
    return _html(f'<a href="/{"h" * MEGABYTE}">a megabyte href</a><a href="/ordinary">ordinary</a>')


def _idn() -> str:
    links = [
        ("http://idn.h\u043estile.test/", "a homograph of this site (Cyrillic o)"),
        ("http://p\u0430ypal.example/login", "a homograph of paypal.example (Cyrillic a)"),
        ("http://\u0456dn.hostile.test/sub", "a homograph of this host, same registered domain (Cyrillic i)"),
        ("http://a\u200db.example/", "a zero-width joiner, which IDNA forbids here"),
        ("/plain", "an ordinary link"),
    ]
    return _html("".join(f'<p><a href="{href}">{text}</a></p>' for href, text in links))


@cache
def _flood(kind: str) -> str:
    """``kind``: ``/same-link``, ``/many-links``, or anything else for the copied page."""
    if kind == "/same-link":
        return _html('<a href="/the-one">again</a> ' * SAME_LINK_REPEATS)
    if kind == "/dense":
        links = "".join(f'<a href="/d/{i}">{i}</a> ' for i in range(110_000))
        return _html(links)[: 2 * MEGABYTE]
    if kind == "/many-links":
        return _html("".join(f'<a href="/item/{i}">item {i}</a> ' for i in range(DISTINCT_LINKS)))
    text = "The same article, word for word, at every address this host serves. " * 40
    return _html(f"<article><h1>One story</h1><p>{text}</p></article>", "one story")


def hostile_page(part: str, path: str) -> web.Response:
    """The answer of the page host playing ``part`` (one of :data:`PAGE_PARTS`) at ``path``."""
    if part == "traps":
        return web.Response(text=_traps(), content_type="text/html")
    if part == "malformed-html":
        return web.Response(body=_malformed(path), headers={"Content-Type": "text/html; charset=utf-8"})
    if part == "long-attributes":
        return web.Response(text=_long(path), content_type="text/html")
    if part == "idn":
        return web.Response(text=_idn(), content_type="text/html")
    if part == "flood":
        kind = path if path in ("/same-link", "/many-links") else "/dense" if path.startswith("/dense/") else "/copy"
        return web.Response(text=_flood(kind), content_type="text/html")
    raise ValueError(f"no page host plays {part!r}")
