"""Fuzzing link extraction through the extractor's own path: fetch result in, page links out.

The corpus pages are mangled (bytes replaced, inserted and cut; tags and
attributes broken, nested, repeated; hostile URLs put into ``href``), and
arbitrary bytes are served as HTML with any declared charset. Every result goes
through :func:`extract_page` as the service calls it (inflate, decode, parse,
links, traps, trafilatura) and must come out as a document and page links:
every kept link, the canonical URL and the final URL are in normal form, no page
has more links than the cap, and a bad link always says why. Bounded: a fixed
number of examples per test.
"""

from __future__ import annotations

import zlib
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libs.common.urls import normalize_url
from libs.common.wire import messages as pb
from services.extractor.links import LinkOptions
from services.extractor.page_extractor import ExtractionOptions, extract_page
from tests.corpus.loader import CorpusCase, load_corpus

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Bounded by the number of examples; no deadline per example, which a loaded machine would trip."""

MAX_LINKS = 200
OPTIONS = ExtractionOptions(links=LinkOptions(max_links=MAX_LINKS), max_html_bytes=256 * 1024)
PAGE_URL = "http://www.fuzz.example/dir/page.html"
PIECES = [
    b"<a href=", b"<a href='", b'<a href="', b"</a>", b"<base href=", b"<link rel=canonical href=", b"<frame src=",
    b"<meta http-equiv=refresh content='0;url=", b"<meta name=robots content=nofollow>", b"<area href=", b"<",
    b">", b"'", b'"', b"=", b"<!--", b"-->", b"<![CDATA[", b"]]>", b"<script>", b"</script>", b"<svg><a xlink:href=",
    b"<div>" * 50, b"</div>" * 50, b"<table><tr><td>", b"&amp;", b"&#0;", b"&#x110000;", b"&#xD800;", b"&nosuch;",
    b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xef\xbf\xbe", b"\r", b"\x0c", b"<?xml?>", b"<!DOCTYPE x/>",
    b"javascript:alert(1)", b"mailto:x@y", b"data:text/html,x", b"http://[::1", b"http://\xd0\xb0pple.com/",
    b"//evil.example/", b"../../../../x", b"?utm_source=z", b"#frag", b"http://a.example:99999/", b"\\\\x\\y",
    b"/2099/12/calendar", b"/a/b/a/b/a/b/", b";jsessionid=0123456789abcdef0123", b"x" * 5000,
]


@cache
def _corpus() -> tuple[CorpusCase, ...]:
    return tuple(case for case in load_corpus() if len(case.body) < 200_000)


def _result(body: bytes, content_type: str, final_url: str = "") -> pb.FetchResult:
    return pb.FetchResult(
        request_id="fuzz", url=PAGE_URL, final_url=final_url or PAGE_URL, host="www.fuzz.example",
        status=pb.FETCH_STATUS_OK, http_status=200, headers=[pb.Header(name="Content-Type", value=content_type)],
        body=zlib.compress(body, 1), body_codec="zlib", body_size=len(body), fetched_at_ms=1_750_000_000_000,
        content_type=content_type.split(";", 1)[0], depth=1,
    )


def _check(result: pb.FetchResult) -> None:
    extracted = extract_page(result, OPTIONS)
    links = extracted.links
    assert len(links.links) <= MAX_LINKS
    for link in links.links:
        if link.link_class == pb.LINK_CLASS_BAD:
            assert link.bad_reason
        else:
            assert normalize_url(link.url) == link.url, link.url
            assert link.trap_rule == ""
    for url in (links.canonical_url, links.final_url, extracted.document.canonical_url):
        assert url == "" or normalize_url(url) == url
    assert extracted.document.url == links.url == normalize_url(PAGE_URL)


@st.composite
def _mangled_page(draw: st.DrawFn) -> bytes:
    case = draw(st.sampled_from(_corpus()))
    data = bytearray(case.body)
    for _ in range(draw(st.integers(1, 20))):
        at = draw(st.integers(0, len(data)))
        piece = draw(st.one_of(st.sampled_from(PIECES), st.binary(min_size=1, max_size=12)))
        kind = draw(st.sampled_from(["insert", "insert", "replace", "cut"]))
        if kind == "insert":
            data[at:at] = piece
        elif kind == "replace":
            data[at : at + len(piece)] = piece
        else:
            del data[at : at + draw(st.integers(1, 400))]
    return bytes(data)


CHARSETS = st.sampled_from([
    "text/html", "text/html; charset=utf-8", "text/html; charset=iso-8859-1", "text/html; charset=shift_jis",
    "text/html; charset=utf-16", "text/html; charset=x-no-such", "text/html; charset=\"utf-8", "application/xhtml+xml",
])


@FUZZ
@given(_mangled_page(), CHARSETS)
def test_mangled_corpus_pages_give_normalised_links(body: bytes, content_type: str) -> None:
    _check(_result(body, content_type))


@FUZZ
@given(st.binary(max_size=4000), CHARSETS)
def test_any_bytes_served_as_html_give_a_document(body: bytes, content_type: str) -> None:
    _check(_result(body, content_type))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.text(max_size=40)), max_size=30),
       st.sampled_from(["", "http://www.fuzz.example/moved/", "https://other.example/x?y=1"]))
def test_generated_link_soup_gives_normalised_links(parts: list[tuple[bytes, str]], final_url: str) -> None:
    body = b"<html><body>" + b"".join(tag + text.encode("utf-8", "surrogatepass") for tag, text in parts)
    _check(_result(body, "text/html; charset=utf-8", final_url))
