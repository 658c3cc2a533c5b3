"""One fetch result to a document and page links: the whole path, the batch path, the wire fields."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import pytest

from libs.common.errors import PoisonMessage
from libs.common.settings import load_settings
from libs.common.urls import UrlSettings, url_fingerprint
from libs.common.wire import messages as pb
from services.extractor.page_extractor import (
    Extracted,
    ExtractionOptions,
    extract_page,
    extract_pages,
    should_extract,
)
from services.extractor.settings import ExtractorSettings

FETCHED_AT = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
FETCHED_AT_MS = int(FETCHED_AT.timestamp() * 1000)

ARTICLE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<title>Council approves the new bridge | Riverside News</title>
<link rel="canonical" href="https://news.example.com/2026/02/bridge?utm_source=feed">
<link rel="next" href="/2026/02/bridge?page=2">
<meta name="author" content="Ines Duarte">
</head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/local/">Local</a></li></ul></nav>
<article><h1>Council approves the new bridge</h1>
<p class="byline">By Ines Duarte, <time datetime="2026-02-27T08:15:00Z">27 February 2026</time></p>
<p>The council voted on Thursday to replace the old iron bridge over the river, ending a debate that
has lasted for more than ten years and divided the town's two main parties.</p>
<p>Engineers had warned that the structure, built in 1889, could not carry modern traffic. According to
<a href="https://engineering.example.org/reports/iron-bridge">the engineering report</a> published last
spring, repairs would cost almost as much as a new crossing.</p>
<p>Construction is expected to start next year and to take about eighteen months, during which a
temporary footbridge will keep the two halves of the town connected for pedestrians and cyclists.</p>
<p>See the <a href="/calendar/2040/01/">meeting calendar</a> and the <a href="javascript:share()">share</a> link.</p>
</article></body></html>"""


def fetch_result(
    html: str | bytes,
    url: str = "https://news.example.com/2026/02/bridge",
    *,
    headers: dict[str, str] | None = None,
    final_url: str = "",
    compress: bool = True,
    **fields: object,
) -> pb.FetchResult:
    raw = html.encode("utf-8") if isinstance(html, str) else html
    header_map = {"Content-Type": "text/html; charset=utf-8", **(headers or {})}
    return pb.FetchResult(
        url=url,
        final_url=final_url or url,
        host="news.example.com",
        status=pb.FETCH_STATUS_OK,
        http_status=200,
        headers=[pb.Header(name=k, value=v) for k, v in header_map.items()],
        body=zlib.compress(raw) if compress else raw,
        body_codec="zlib" if compress else "identity",
        body_size=len(raw),
        fetched_at_ms=FETCHED_AT_MS,
        content_type=header_map["Content-Type"],
        depth=2,
        **fields,  # type: ignore[arg-type]  # the remaining FetchResult fields, by name
    )


def test_document_and_links_of_an_article() -> None:
    out = extract_page(fetch_result(ARTICLE))
    doc, page = out.document, out.links
    assert doc.url == page.url == "https://news.example.com/2026/02/bridge"
    assert doc.host == page.host == "news.example.com"
    assert doc.title == "Council approves the new bridge"
    assert doc.author == "Ines Duarte"
    assert "replace the old iron bridge" in doc.text
    assert doc.published_at_ms == int(datetime(2026, 2, 27, tzinfo=UTC).timestamp() * 1000)  # <time>: the day
    assert doc.charset == "utf-8"
    assert doc.extraction_error == ""
    assert len(doc.content_fingerprint) == 32
    assert doc.canonical_url == page.canonical_url == "https://news.example.com/2026/02/bridge"
    assert page.final_url == ""
    assert page.depth == 2 and page.fetched_at_ms == FETCHED_AT_MS
    links = {link.url: link for link in page.links}
    report = links["https://engineering.example.org/reports/iron-bridge"]
    assert report.link_class == pb.LINK_CLASS_EXTERNAL
    assert report.source_tag == "a"
    assert report.anchor == "the engineering report"
    assert "According to the engineering report published last spring" in report.context
    assert links["https://news.example.com/2026/02/bridge?page=2"].source_tag == "link:next"
    assert links["https://news.example.com/2026/02/bridge"].source_tag == "link:canonical"
    trap = links["https://news.example.com/calendar/2040/01/"]
    assert (trap.link_class, trap.bad_reason, trap.trap_rule) == (pb.LINK_CLASS_BAD, "trap:calendar", "calendar")
    assert trap.anchor == "meeting calendar"
    bad = links["javascript:share()"]
    assert (bad.link_class, bad.bad_reason, bad.trap_rule) == (pb.LINK_CLASS_BAD, "unsupported_scheme:javascript", "")


def test_publish_time_of_day_and_the_fetch_bound() -> None:
    meta = '<meta property="article:published_time" content="2026-02-27T08:15:00+01:00">'
    out = extract_page(fetch_result(ARTICLE.replace("<title>", meta + "<title>")))
    assert out.document.published_at_ms == int(datetime(2026, 2, 27, 7, 15, tzinfo=UTC).timestamp() * 1000)
    future = '<meta property="article:published_time" content="2026-09-01T00:00:00Z">'
    out = extract_page(fetch_result(ARTICLE.replace("<title>", future + "<title>")))
    assert out.document.published_at_ms < FETCHED_AT_MS  # not after the fetch: the next candidate wins


def test_page_links_carry_the_followed_links_for_the_importance_service() -> None:
    page = extract_page(fetch_result(ARTICLE)).links
    by_url = dict(zip(page.followed_urls, page.followed_external, strict=True))
    assert by_url == {
        "https://news.example.com/": False,
        "https://news.example.com/local/": False,
        "https://engineering.example.org/reports/iron-bridge": True,
        "https://news.example.com/2026/02/bridge?page=2": False,
    }  # not the page itself (its canonical link), not the trapped calendar, not javascript:
    assert list(page.followed_fingerprints) == [url_fingerprint(u) for u in page.followed_urls]
    nofollow = ARTICLE.replace("<title>", '<meta name="robots" content="nofollow"><title>')
    assert list(extract_page(fetch_result(nofollow)).links.followed_urls) == []


def test_a_link_the_page_repeats_is_counted_in_its_message_and_followed_counts() -> None:
    html = ("<html><body><nav><a href='/a'>A</a><a href='/b'>B</a></nav>"
            "<p><a href='/a'>A again</a></p><footer><a href='/a'>A</a></footer></body></html>")
    page = extract_page(fetch_result(html)).links
    occurrences = {link.url: link.occurrences for link in page.links}
    assert occurrences == {"https://news.example.com/a": 3, "https://news.example.com/b": 0}  # 0: once
    assert dict(zip(page.followed_urls, page.followed_counts, strict=True)) == {
        "https://news.example.com/a": 3, "https://news.example.com/b": 1}


def test_messages_survive_the_wire() -> None:
    out = extract_page(fetch_result(ARTICLE))
    assert pb.Document.FromString(out.document.SerializeToString()) == out.document
    assert pb.PageLinks.FromString(out.links.SerializeToString()) == out.links


def test_redirected_page_resolves_links_against_the_final_url() -> None:
    html = "<html><body><p>Moved here.</p><a href='next.html'>next</a></body></html>"
    out = extract_page(fetch_result(html, "http://old-site.example.net/a", final_url="https://www.example.com/new/a#x"))
    assert out.links.url == out.document.url == "http://old-site.example.net/a"
    assert out.links.final_url == "https://www.example.com/new/a"
    assert [link.url for link in out.links.links] == ["https://www.example.com/new/next.html"]
    assert out.links.links[0].link_class == pb.LINK_CLASS_INTERNAL  # classed by the final site, not the old one


def test_an_uncrawlable_redirect_target_falls_back_to_the_page_url() -> None:
    html = "<html><body><a href='b.html'>b</a></body></html>"
    out = extract_page(fetch_result(html, "http://h.example.com/a/x", final_url="ftp://h.example.com/z"))
    assert out.links.final_url == ""
    assert out.links.links[0].url == "http://h.example.com/a/b.html"


def test_invalid_page_url_or_body_is_a_poison_message() -> None:
    with pytest.raises(PoisonMessage, match="invalid URL"):
        extract_page(fetch_result(ARTICLE, "javascript:alert(1)"))
    broken = fetch_result(ARTICLE)
    broken.body = b"not zlib at all"
    with pytest.raises(PoisonMessage, match="corrupt zlib"):
        extract_page(broken)


def test_robots_headers_link_header_and_content_language() -> None:
    html = "<html><body><p>" + "Ein Satz über den Fluss und die Brücke. " * 20 + "</p><a href='/x'>x</a></body></html>"
    result = fetch_result(
        html,
        headers={"Link": '</canonical-from-header>; rel="canonical"', "Content-Language": "de-AT"},
        x_robots_tag="otherbot: noindex, trawl: nofollow",
    )
    out = extract_page(result)
    assert out.document.canonical_url == "https://news.example.com/canonical-from-header"
    assert out.document.language == "de"
    assert out.document.noindex is False
    assert out.links.nofollow is True
    assert {link.source_tag for link in out.links.links} == {"a", "header:canonical"}


def test_wrong_declared_charset_is_redecoded() -> None:
    body = "<html><body><p>Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve fa\u00e7ade.</p></body></html>".encode(
        "cp1252"
    )
    out = extract_page(fetch_result(body, compress=False))
    assert "Café crème brûlée" in out.document.text
    assert out.document.charset != "utf-8"


def test_link_cap_is_recorded() -> None:
    html = "<html><body>" + "".join(f"<a href='/p{i}'>{i}</a>" for i in range(50)) + "</body></html>"
    out = extract_page(fetch_result(html), max_links=10)
    assert len(out.links.links) == 10
    assert out.links.links_truncated is True


def test_batch_keeps_order_and_isolates_poison() -> None:
    good = fetch_result(ARTICLE)
    poison = fetch_result(ARTICLE, "mailto:x@y.example")
    other = fetch_result("<html><body><p>Short page.</p></body></html>", "https://news.example.com/short")
    for phase_bytes in (1, 1 << 20):
        options = ExtractionOptions(phase_bytes=phase_bytes)
        out = extract_pages([good, poison, other, good], options)
        assert [type(item) for item in out] == [Extracted, PoisonMessage, Extracted, Extracted]
        assert isinstance(out[0], Extracted) and isinstance(out[3], Extracted)
        assert out[0] == out[3] == extract_page(good, options)
        assert isinstance(out[2], Extracted) and out[2].document.url == "https://news.example.com/short"


def test_options_come_from_the_settings() -> None:
    env = {
        "TRAWL_URL_SORT_QUERY": "true",
        "TRAWL_EXTRACTOR_TRAP_RULES": "url_length",
        "TRAWL_EXTRACTOR_LINK_CONTEXT_CHARS": "0",
        "TRAWL_EXTRACTOR_ROBOTS_TOKEN": "mybot",
    }
    options = ExtractionOptions.from_settings(
        load_settings(ExtractorSettings, env), load_settings(UrlSettings, env).policy()
    )
    html = "<html><head><meta name='mybot' content='nofollow'></head><body><a href='/c/2040/01/?b=1&a=2'>x</a>"
    out = extract_page(fetch_result(html), options)
    (link,) = out.links.links
    assert link.url == "https://news.example.com/c/2040/01/?a=2&b=1"
    assert link.trap_rule == "" and link.context == "" and link.nofollow is True


def test_only_html_results_are_extracted() -> None:
    assert should_extract(fetch_result(ARTICLE))
    assert not should_extract(fetch_result(ARTICLE, headers={"Content-Type": "application/pdf"}))
    failed = fetch_result(ARTICLE)
    failed.status = pb.FETCH_STATUS_HTTP_ERROR
    assert not should_extract(failed)


def test_pages_dense_in_elements_weigh_more_in_a_phase() -> None:
    from services.extractor.page_extractor import TAG_WEIGHT, _weight

    ordinary = b"<p>" + b"A sentence of ordinary prose, long enough to hold a few words. " * 20 + b"</p>"
    dense = b"".join(b'<a href="/d/%d">%d</a> ' % (i, i) for i in range(1000))
    assert _weight(ordinary) == len(ordinary)
    assert _weight(dense) == TAG_WEIGHT * 2000 > 2 * len(dense)
