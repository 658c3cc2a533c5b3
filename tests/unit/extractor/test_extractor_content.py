"""Main text, metadata and publish date; the fallback path; the duplicate fingerprint."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import lxml.etree
import pytest

from services.extractor import content
from services.extractor.content import content_fingerprint, extract_content, parse_date_ms
from services.extractor.html_tree import parse_html

ARTICLE = """<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>River levels rise after a week of storms | Valley Gazette</title>
  <meta name="description" content="Flood defences held overnight as the river reached its highest level since 1998.">
  <meta name="author" content="Maria Okafor">
  <link rel="canonical" href="https://gazette.example/news/2024/river-levels">
  <script>window.analytics = {track: function () {}};</script>
  <style>.menu li { display: inline; }</style>
</head>
<body>
  <header>
    <a href="/">Valley Gazette</a>
    <nav class="menu"><ul>
      <li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li>
      <li><a href="/weather">Weather</a></li><li><a href="/opinion">Opinion</a></li>
    </ul></nav>
  </header>
  <main>
    <article>
      <h1>River levels rise after a week of storms</h1>
      <p class="byline">By <span class="author">Maria Okafor</span> &middot;
        <time datetime="2024-03-05T10:30:00Z" pubdate>5 March 2024</time></p>
      <p>The river running through the valley reached its highest level since 1998 on Tuesday night,
        after a week of storms brought more than twice the usual monthly rainfall to the hills above
        the town.</p>
      <p>Flood defences built after the last major flood held overnight, the county council said,
        although several roads near the old mill were closed and a footbridge was swept away in the
        early hours of the morning.</p>
      <p>"We have been watching the gauges every hour," said the council's emergency planning officer.
        "The defences did exactly what they were designed to do, but people living near the water
        should stay alert, because more rain is forecast for the weekend."</p>
      <p>Residents of the lower streets were advised to move valuables upstairs and to keep sandbags
        ready. Volunteers from the rowing club helped deliver supplies to houses cut off by water on
        the eastern bank.</p>
      <p>The environment agency said river levels were expected to fall slowly from Thursday, but
        warned that the ground was saturated and that any further heavy rain could cause rapid rises
        in smaller streams feeding the main river.</p>
    </article>
    <aside>
      <h2>Most read</h2>
      <ul><li><a href="/news/bakery">Bakery wins national award</a></li>
      <li><a href="/sport/derby">Derby ends in a draw</a></li></ul>
    </aside>
  </main>
  <footer><p>&copy; 2024 Valley Gazette. <a href="/privacy">Privacy</a> <a href="/contact">Contact</a></p></footer>
</body>
</html>"""


def test_article_text_metadata_and_publish_date() -> None:
    page = extract_content(ARTICLE, "https://gazette.example/news/2024/river-levels")
    assert page.error == ""
    assert page.title == "River levels rise after a week of storms"
    assert page.author == "Maria Okafor"
    assert page.language == "en"
    assert "highest level since 1998" in page.text
    assert "rowing club" in page.text
    assert "Most read" not in page.text
    assert "window.analytics" not in page.text
    assert "Privacy" not in page.text
    published = datetime.fromtimestamp(page.published_at_ms / 1000, UTC)
    assert published.date() == datetime(2024, 3, 5, tzinfo=UTC).date()
    assert page.truncated is False


def test_publish_time_with_offset_from_json_ld() -> None:
    html = ARTICLE.replace(
        "</head>",
        '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "NewsArticle",'
        ' "datePublished": "2024-03-05T10:30:00+01:00"}</script></head>',
    )
    page = extract_content(html, "https://gazette.example/news/2024/river-levels")
    assert page.published_at_ms == int(datetime(2024, 3, 5, 9, 30, tzinfo=UTC).timestamp() * 1000)


def test_fallback_when_nothing_looks_like_main_content() -> None:
    html = """<html lang="fr"><head><title>Accueil</title>
      <meta property="article:published_time" content="2023-11-02T08:00:00+00:00"></head>
      <body><script>track()</script>
      <aside>Texte de côté</aside><div id="cookie-banner">Nous utilisons des cookies</div>
      <footer>Pied de page</footer></body></html>"""
    page = extract_content(html, "https://site.example/")
    assert page.error == "fallback:no_main_content"
    assert page.title == "Accueil"
    assert page.language == "fr"
    assert "Texte de côté" in page.text
    assert "Nous utilisons des cookies" in page.text
    for hidden in ("track()", "Pied de page"):
        assert hidden not in page.text
    assert page.published_at_ms == int(datetime(2023, 11, 2, 8, tzinfo=UTC).timestamp() * 1000)


def test_fallback_when_trafilatura_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(content, "bare_extraction", broken)
    page = extract_content(ARTICLE, "https://gazette.example/x")
    assert page.error == "fallback:trafilatura_error:RuntimeError"
    assert "highest level since 1998" in page.text
    assert "Valley Gazette" in page.text  # the fallback keeps headers: it is not a main-content extractor
    for hidden in ("Privacy", "Weather", "window.analytics", ".menu li"):
        assert hidden not in page.text
    assert page.author == "Maria Okafor"
    assert page.title.startswith("River levels rise")


def test_a_page_of_too_many_elements_skips_trafilatura_and_keeps_its_visible_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("trafilatura was asked")

    root = parse_html(ARTICLE)
    elements = sum(1 for _ in root.iter())
    before = lxml.etree.tostring(root)
    monkeypatch.setattr(content, "bare_extraction", never)
    page = content.content_from_tree(root, "https://gazette.example/x", max_elements=elements - 1)
    assert page.error == "fallback:too_many_elements"
    assert "highest level since 1998" in page.text and "Valley Gazette" in page.text
    for hidden in ("Privacy", "Weather", "window.analytics", ".menu li"):
        assert hidden not in page.text
    assert page.title.startswith("River levels rise") and page.author == "Maria Okafor"
    assert lxml.etree.tostring(root) == before  # the tree is read, not changed
    monkeypatch.undo()
    assert content.content_from_tree(root, "https://gazette.example/x", max_elements=elements).error == ""


def test_fallback_with_no_text_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "bare_extraction", lambda *a, **k: None)
    page = extract_content("<html><body><script>x()</script></body></html>", "https://a.example/")
    assert page.error == "fallback:no_main_content:no_text"
    assert page.text == ""


@pytest.mark.parametrize("html", ["", "   \n ", "\x00\x01garbage<<<>>>", "<html", "<?xml version='1.0'?><a/>"])
def test_degenerate_input_never_raises_and_never_silently_empty(html: str) -> None:
    page = extract_content(html, "https://a.example/")
    assert page.text or page.error


def test_huge_input_is_capped() -> None:
    html = "<html><body>" + "<p>word " * 2000 + "</p>" * 2000 + "</body></html>"
    page = extract_content(html, "https://a.example/", max_html_chars=5000)
    assert page.truncated is True
    assert 0 < len(page.text) < 5000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-05", datetime(2024, 3, 5, tzinfo=UTC)),
        ("2024-03-05T10:30:00", datetime(2024, 3, 5, 10, 30, tzinfo=UTC)),
        ("2024-03-05T10:30:00Z", datetime(2024, 3, 5, 10, 30, tzinfo=UTC)),
        ("2024-03-05T10:30:00+0100", datetime(2024, 3, 5, 9, 30, tzinfo=UTC)),
    ],
)
def test_parse_date_ms(value: str, expected: datetime) -> None:
    assert parse_date_ms(value) == int(expected.timestamp() * 1000)


@pytest.mark.parametrize("value", [None, "", "yesterday", "2024-13-45"])
def test_parse_date_ms_unknown(value: str | None) -> None:
    assert parse_date_ms(value) == 0


def test_content_fingerprint() -> None:
    fp = content_fingerprint("Hello   World\n\tagain")
    assert len(fp) == 32
    assert int(fp, 16) >= 0
    assert fp == content_fingerprint("hello world again")
    assert fp == content_fingerprint("  HELLO WORLD AGAIN  ")
    assert fp != content_fingerprint("hello world, again")


def test_parse_date_ms_ignores_the_local_timezone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_date_ms("2024-03-05") == int(datetime(2024, 3, 5, tzinfo=UTC).timestamp() * 1000)
    finally:
        monkeypatch.undo()
        time.tzset()
