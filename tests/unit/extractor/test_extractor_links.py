"""Out-link extraction: resolution, anchors, classes, robots directives, bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.extractor.links import (
    ExtractedLink,
    PageLinkSet,
    extract_links,
    parse_robots_directives,
    parse_x_robots_tag,
)

PAGE = "http://www.example.com/dir/page.html"


def _links(html: str, page: str = PAGE) -> dict[str, ExtractedLink]:
    return {link.url: link for link in extract_links(html, page).links}


def test_relative_and_absolute_links_are_resolved_and_normalised() -> None:
    html = """<html><body>
      <a href="a.html">A</a>
      <a href="/root?utm_source=x&amp;q=1">Root</a>
      <a href="../up/">Up</a>
      <a href="//cdn.example.com/x">CDN</a>
      <a href="HTTP://Other.ORG:80/P#frag">Other</a>
      <a href=" b.html ">Spaces</a>
    </body></html>"""
    links = _links(html)
    assert set(links) == {
        "http://www.example.com/dir/a.html",
        "http://www.example.com/root?q=1",
        "http://www.example.com/up/",
        "http://cdn.example.com/x",
        "http://other.org/P",
        "http://www.example.com/dir/b.html",
    }
    assert [link.anchor for link in extract_links(html, PAGE).links][:3] == ["A", "Root", "Up"]


def test_base_href_is_honoured_and_only_the_first_counts() -> None:
    html = """<html><head><base href="https://static.example.com/base/"><base href="/ignored/"></head>
      <body><a href="x">X</a></body></html>"""
    result = extract_links(html, PAGE)
    assert result.base_url == "https://static.example.com/base/"
    assert [link.url for link in result.links] == ["https://static.example.com/base/x"]


def test_invalid_base_href_falls_back_to_page_url() -> None:
    result = extract_links('<base href="javascript:x"><a href="y">Y</a>', PAGE)
    assert result.base_url == PAGE
    assert result.links[0].url == "http://www.example.com/dir/y"


def test_anchor_text_is_collapsed_capped_and_includes_img_alt() -> None:
    html = f"""<a href="/1">  Hello
        <b>bold</b>\t<img src="i.png" alt="a picture"> tail <!-- comment --> end<script>x()</script></a>
      <a href="/2"><img src="logo.png"></a>
      <a href="/3">{"word " * 200}</a>"""
    links = _links(html)
    assert links["http://www.example.com/1"].anchor == "Hello bold a picture tail end"
    assert links["http://www.example.com/2"].anchor == ""
    long_anchor = links["http://www.example.com/3"].anchor
    assert len(long_anchor) == 256
    assert "  " not in long_anchor


def test_duplicates_keep_first_position_and_first_non_empty_anchor() -> None:
    html = """<a href="/x"><img src="x.png"></a><a href="/y">Y</a><a href="/x#top">Text for X</a>
      <a href="/x">Later</a>"""
    result = extract_links(html, PAGE)
    assert [link.url for link in result.links] == ["http://www.example.com/x", "http://www.example.com/y"]
    assert result.links[0].anchor == "Text for X"


def test_rel_nofollow_per_link_and_merged_duplicates() -> None:
    html = """<a href="/a" rel="NoFollow noopener">A</a><a href="/b">B</a>
      <a href="/c" rel="nofollow">C1</a><a href="/c">C2</a>"""
    links = _links(html)
    assert links["http://www.example.com/a"].nofollow is True
    assert links["http://www.example.com/b"].nofollow is False
    assert links["http://www.example.com/c"].nofollow is False  # followable once is followable


def test_area_links() -> None:
    html = '<map name="m"><area shape="rect" href="/region" alt="A  region"><area nohref></map>'
    result = extract_links(html, PAGE)
    assert [(link.url, link.anchor) for link in result.links] == [("http://www.example.com/region", "A region")]


@pytest.mark.parametrize(
    ("meta", "noindex", "nofollow"),
    [
        ('<meta name="robots" content="noindex, nofollow">', True, True),
        ('<meta name="ROBOTS" content="NOFOLLOW">', False, True),
        ('<meta name="robots" content="noindex">', True, False),
        ('<meta name="robots" content="none">', True, True),
        ('<meta name="robots" content="all">', False, False),
        ('<meta name="robots" content="index, follow">', False, False),
        ('<meta name=" Robots " content="noindex"><meta name="robots" content="nofollow">', True, True),
        ('<meta name="googlebot" content="noindex, nofollow">', False, False),
        ('<meta name="description" content="none">', False, False),
    ],
)
def test_meta_robots(meta: str, noindex: bool, nofollow: bool) -> None:
    result = extract_links(f"<html><head>{meta}</head><body><a href='/x'>x</a></body></html>", PAGE)
    assert (result.meta_noindex, result.meta_nofollow) == (noindex, nofollow)
    assert result.links[0].nofollow is nofollow  # a link's flag includes the page-level directive


def test_canonical() -> None:
    html = '<head><link rel="canonical" href="/dir/page.html?utm_campaign=x#a"></head>'
    assert extract_links(html, PAGE).canonical_url == "http://www.example.com/dir/page.html"
    html = '<head><link rel="alternate canonical" href="https://m.example.com/p"></head>'
    assert extract_links(html, PAGE).canonical_url == "https://m.example.com/p"
    assert extract_links('<link rel="canonical" href="mailto:x@y">', PAGE).canonical_url is None
    assert extract_links("<a href='/x'>x</a>", PAGE).canonical_url is None


def test_bad_links_keep_raw_href_and_reason() -> None:
    long_href = "/" + "a" * 9000
    html = f"""<a href="javascript:void(0)">js</a><a href="mailto:me@example.com">mail</a>
      <a href="tel:+1-555">tel</a><a href="data:text/html,hi">data</a><a href="http://exa mple.com/">sp</a>
      <a href="http://h.com:99999/">port</a><a href="{long_href}">long</a><a href="ftp://f.example.com/">ftp</a>"""
    result = extract_links(html, PAGE)
    assert all(link.link_class == "bad" for link in result.links)
    reasons = [(link.url[:20], link.bad_reason) for link in result.links]
    assert reasons == [
        ("javascript:void(0)", "unsupported_scheme:javascript"),
        ("mailto:me@example.co", "unsupported_scheme:mailto"),
        ("tel:+1-555", "unsupported_scheme:tel"),
        ("data:text/html,hi", "unsupported_scheme:data"),
        ("http://exa mple.com/", "bad_host"),
        ("http://h.com:99999/", "bad_port"),
        ("/aaaaaaaaaaaaaaaaaaa", "too_long"),
        ("ftp://f.example.com/", "unsupported_scheme:ftp"),
    ]
    assert len(result.links[6].url) == 2048
    assert result.links[0].anchor == "js"


def test_internal_and_external_classes() -> None:
    html = """<a href="/self">1</a><a href="http://blog.example.com/">2</a><a href="https://example.com/">3</a>
      <a href="http://example.org/">4</a><a href="http://other.co.uk/">5</a>"""
    links = _links(html)
    assert [link.link_class for link in links.values()] == ["internal", "internal", "internal", "external", "external"]


def test_classes_on_test_hosts_and_public_suffixes() -> None:
    html = """<a href="http://b.site.test/">same site</a><a href="http://other.test/">other site</a>
      <a href="http://x.a.co.uk/">co.uk sibling</a>"""
    links = _links(html, "http://a.site.test/")
    assert links["http://b.site.test/"].link_class == "internal"
    assert links["http://other.test/"].link_class == "external"
    links = _links('<a href="http://x.a.co.uk/">1</a><a href="http://b.co.uk/">2</a>', "http://www.a.co.uk/")
    assert links["http://x.a.co.uk/"].link_class == "internal"
    assert links["http://b.co.uk/"].link_class == "external"
    links = _links('<a href="http://bob.github.io/">1</a>', "http://alice.github.io/")
    assert links["http://bob.github.io/"].link_class == "external"


def test_link_cap_is_respected() -> None:
    html = "".join(f'<a href="/p{i}">{i}</a>' for i in range(120))
    result = extract_links(html, PAGE, max_links=50)
    assert len(result.links) == 50
    assert result.truncated is True
    assert result.links[-1].url == "http://www.example.com/p49"
    assert extract_links(html, PAGE).truncated is False


def test_custom_href_length_limit() -> None:
    result = extract_links('<a href="/' + "b" * 100 + '">x</a>', PAGE, max_href_length=50)
    assert result.links[0].bad_reason == "too_long"


@pytest.mark.parametrize(
    "html",
    [
        "",
        "   ",
        "<<<>>>",
        "<a href='/x'>unclosed <b>bold <i>italic",
        "<html><body><a href='/a'>a</a></p></div></td><a href='/b'>b",
        "<?xml version='1.0' encoding='utf-8'?><html><body><a href='/a'>a</a></body></html>",
        "<a href='/nul\x00'>x\x00</a>",
        "<table><tr><a href='/t'>in table</a></tr></table>",
        "<a href='/a'><a href='/b'>nested</a></a>",
    ],
)
def test_malformed_html_does_not_break_extraction(html: str) -> None:
    result = extract_links(html, PAGE)
    assert isinstance(result, PageLinkSet)
    assert all(link.url for link in result.links)


def test_malformed_html_still_yields_links() -> None:
    links = _links("<html><body><a href='/a'>a</a></p></div></td><a href='/b'>b")
    assert set(links) == {"http://www.example.com/a", "http://www.example.com/b"}


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(html: str) -> None:
    extract_links(html, PAGE)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("noindex", (True, False)),
        ("NOINDEX, NOFOLLOW", (True, True)),
        ("none", (True, True)),
        ("all", (False, False)),
        ("noarchive, nosnippet", (False, False)),
        ("unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow", (False, True)),
        ("max-snippet: 20, noindex", (True, False)),
        ("googlebot: noindex, nofollow", (False, False)),
        ("googlebot: noindex, trawl: nofollow", (False, True)),
        ("Trawl: none", (True, True)),
        ("", (False, False)),
    ],
)
def test_x_robots_tag(value: str, expected: tuple[bool, bool]) -> None:
    assert parse_x_robots_tag(value) == expected


def test_robots_directive_parser() -> None:
    assert parse_robots_directives(" noindex ,follow") == (True, False)
    assert parse_robots_directives("NONE").nofollow is True
