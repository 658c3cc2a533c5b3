"""Out-link extraction: resolution, anchors, classes, robots directives, bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.extractor.html_tree import parse_html
from services.extractor.links import ExtractedLink, LinkOptions, PageLinkSet, extract_links, extract_links_from_tree

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


def test_a_link_counts_its_followable_occurrences() -> None:
    html = """<nav><a href="/x">X</a><a href="/y">Y</a></nav><p><a href="/x#more">X again</a>
      <a href="/y" rel="nofollow">Y, nofollow</a><a href="/z" rel="nofollow">Z</a></p>
      <footer><a href="/x">X</a></footer>"""
    links = _links(html)
    assert links["http://www.example.com/x"].occurrences == 3
    assert links["http://www.example.com/y"].occurrences == 1  # a nofollow occurrence passes nothing
    assert links["http://www.example.com/z"].occurrences == 0


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


def test_link_rel_next_prev_alternate_canonical_are_links() -> None:
    html = """<html><head>
      <link rel="canonical" href="/dir/page.html">
      <link rel="next" href="page2.html"><link rel="Previous" href="page0.html">
      <link rel="alternate" hreflang="de" href="/de/seite.html" title="Deutsch">
      <link rel="alternate" type="application/rss+xml" href="/feed.xml">
      <link rel="alternate stylesheet" href="/dark.css"><link rel="stylesheet" href="/main.css">
      <link rel="icon" href="/favicon.ico"><link rel="preload" href="/font.woff2">
    </head><body><a href="page2.html">Next page</a></body></html>"""
    links = _links(html)
    assert {url: link.source_tag for url, link in links.items()} == {
        "http://www.example.com/dir/page.html": "link:canonical",
        "http://www.example.com/dir/page2.html": "a",  # an anchor outranks <link rel=next>
        "http://www.example.com/dir/page0.html": "link:prev",
        "http://www.example.com/de/seite.html": "link:alternate",
        "http://www.example.com/feed.xml": "link:alternate",
    }
    assert links["http://www.example.com/dir/page2.html"].anchor == "Next page"
    assert links["http://www.example.com/de/seite.html"].anchor == "Deutsch"


def test_frames_and_iframes_are_followed() -> None:
    html = """<html><frameset cols="20%,80%"><frame src="menu.html" title="Menu"><frame src="/content.html">
      <noframes><a href="/noframes.html">No frames</a></noframes></frameset></html>"""
    links = _links(html)
    assert links["http://www.example.com/dir/menu.html"].source_tag == "frame"
    assert links["http://www.example.com/dir/menu.html"].anchor == "Menu"
    assert links["http://www.example.com/content.html"].link_class == "internal"
    assert links["http://www.example.com/content.html"].nofollow is False
    html = """<body><iframe src="https://www.youtube.com/embed/x1"></iframe><iframe srcdoc="<p>hi</p>"></iframe>
      <iframe src="/widget?utm_source=x" title="Weather widget"></iframe></body>"""
    links = _links(html)
    assert set(links) == {"https://www.youtube.com/embed/x1", "http://www.example.com/widget"}
    assert links["https://www.youtube.com/embed/x1"].source_tag == "iframe"
    assert links["https://www.youtube.com/embed/x1"].link_class == "external"


def test_meta_refresh_is_a_link() -> None:
    for content in ("0; url=/moved.html", "5;URL='/moved.html'", "url=/moved.html", '0; URL="/moved.html"'):
        html = f'<head><meta http-equiv="Refresh" content="{content}"></head>'
        result = extract_links(html.replace('"/moved.html"', "/moved.html"), PAGE)
        assert [(link.url, link.source_tag) for link in result.links] == [
            ("http://www.example.com/moved.html", "meta:refresh")
        ], content
    assert extract_links('<meta http-equiv="refresh" content="30">', PAGE).links == []


def test_base_href_counts_even_after_the_links() -> None:
    html = '<body><a href="x">X</a></body><base href="http://cdn.example.net/b/">'
    result = extract_links(html, PAGE)
    assert result.base_url == "http://cdn.example.net/b/"
    assert result.links[0].url == "http://cdn.example.net/b/x"
    assert result.links[0].link_class == "external"


def test_context_is_the_text_around_the_link_in_its_block() -> None:
    html = """<body><div class="story">
      <p>Flood defences held overnight, said the council, after
         <a href="http://agency.example.org/report">the agency's report</a> warned of rising water
         in the lower streets.</p>
      <ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a> <span>(12 new)</span></li></ul>
      <p>Line one<br><a href="/after-break">after a break</a> and more</p>
    </div></body>"""
    links = _links(html)
    report = links["http://agency.example.org/report"]
    assert report.anchor == "the agency's report"
    assert report.context == (
        "Flood defences held overnight, said the council, after the agency's report warned of rising water"
        " in the lower streets."
    )
    assert links["http://www.example.com/news"].context == "News"
    assert links["http://www.example.com/sport"].context == "Sport (12 new)"
    assert links["http://www.example.com/after-break"].context == "after a break and more"


def test_context_window_is_bounded_and_can_be_turned_off() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    html = f'<p>{words} <a href="/x">middle</a> {words}</p>'
    link = extract_links(html, PAGE, context_chars=30).links[0]
    before, _, after = link.context.partition(" middle ")
    assert 0 < len(before) <= 30 and 0 < len(after) <= 30
    assert before.startswith("word") and after.startswith("word0")
    assert extract_links(html, PAGE, context_chars=0).links[0].context == ""


def test_meta_robots_for_the_crawler_by_name() -> None:
    root = parse_html('<head><meta name="trawl" content="nofollow"></head><a href="/a">a</a>')
    assert extract_links_from_tree(root, PAGE, LinkOptions(robots_agent="trawl")).meta_nofollow is True
    assert extract_links_from_tree(root, PAGE, LinkOptions(robots_agent="otherbot")).meta_nofollow is False


def test_http_link_header_links_and_canonical() -> None:
    root = parse_html('<base href="http://elsewhere.example/"><a href="/a">a</a>')
    header = [("/canonical", "canonical"), ("/p/2", "next"), ("/style.css", "preload")]
    result = extract_links_from_tree(root, PAGE, LinkOptions(), header)
    assert result.canonical_url == "http://www.example.com/canonical"  # headers ignore <base>
    assert [(link.url, link.source_tag) for link in result.links] == [
        ("http://elsewhere.example/a", "a"),
        ("http://www.example.com/canonical", "header:canonical"),
        ("http://www.example.com/p/2", "header:next"),
    ]
    html_canonical = parse_html('<link rel="canonical" href="/html-wins">')
    assert extract_links_from_tree(html_canonical, PAGE, LinkOptions(), header).canonical_url == (
        "http://www.example.com/html-wins"
    )


def test_resolution_is_the_same_with_the_cross_page_cache() -> None:
    """Root-relative and absolute references are cached per origin; others never are."""
    for page in ("http://www.example.com/a/b.html", "http://www.example.com/c/d/e.html"):
        html = '<a href="/x">1</a><a href="y">2</a><a href="/\\z">3</a>'
        links = [link.url for link in extract_links(html, page).links]
        directory = page.rsplit("/", 1)[0]
        assert links == ["http://www.example.com/x", f"{directory}/y", "http://z/"]
    links = [link.url for link in extract_links('<a href="/x">x</a>', "https://other.example:8443/p").links]
    assert links == ["https://other.example:8443/x"]
