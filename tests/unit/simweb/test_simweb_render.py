"""HTML of simulated pages: structure, sizes, and links that match the ground truth exactly."""

from __future__ import annotations

import statistics
from html.parser import HTMLParser
from urllib.parse import urljoin

import pytest

from libs.simweb import SimWeb, SimWebConfig, build_web


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")


def _hrefs(html: str) -> list[str]:
    parser = _Anchors()
    parser.feed(html)
    return parser.hrefs


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SimWebConfig(seed=21, hosts=30, pages=800))


def test_page_structure(web: SimWeb) -> None:
    page = next(p for p in web.pages.values() if p.role == "page" and p.links)
    html = web.html(page.url) or ""
    assert html.startswith("<!doctype html>\n<html lang=\"en\">")
    assert '<meta charset="utf-8">' in html
    assert f"<title>{page.title} | " in html
    assert "<nav" in html and "<article>" in html and "<footer>" in html
    assert f'<time datetime="{page.published_at:%Y-%m-%dT%H:%M:%SZ}">' in html
    assert html.count("<p>") >= web.config.paragraphs_range[0]


def test_every_anchor_is_a_ground_truth_link(web: SimWeb) -> None:
    for page in list(web.pages_at().values())[:300]:
        html = web.html(page.url) or ""
        found = sorted(href if href.startswith(("javascript:", "mailto:", "data:", "http://[")) else
                       urljoin(page.url, href) for href in _hrefs(html))
        expected = sorted(link.target_url for link in web.links_at(page.url))
        assert found == expected, page.url


def test_relative_and_absolute_links_are_mixed(web: SimWeb) -> None:
    hrefs = [href for page in list(web.pages.values())[:100] for href in _hrefs(web.html(page.url) or "")]
    assert any(href.startswith("/") for href in hrefs)
    assert any(href.startswith("http://") for href in hrefs)


def test_meta_robots_flags(web: SimWeb) -> None:
    for page in web.pages.values():
        if page.nofollow or page.noindex:
            html = web.html(page.url) or ""
            assert '<meta name="robots"' in html
            assert ("nofollow" in html.split("</head>")[0]) == page.nofollow
            assert ("noindex" in html.split("</head>")[0]) == page.noindex
    assert any(p.nofollow for p in web.pages.values()) and any(p.noindex for p in web.pages.values())
    plain = next(p for p in web.pages.values() if not p.nofollow and not p.noindex)
    assert '<meta name="robots"' not in (web.html(plain.url) or "")


def test_sizes_are_those_of_real_pages(web: SimWeb) -> None:
    sizes = sorted(len((web.html(url) or "").encode()) for url in web.pages_at())
    assert sizes[0] >= 4_000 and sizes[-1] <= 45_000
    assert sizes[len(sizes) // 50] >= 5_000  # 98% of pages are 5 KB or more
    assert 7_000 < statistics.median(sizes) < 15_000


def test_main_text_extractor_finds_the_article(web: SimWeb) -> None:
    trafilatura = pytest.importorskip("trafilatura")
    page = next(p for p in web.pages.values() if p.role == "page" and len(p.links) > 6)
    extracted = trafilatura.extract(web.html(page.url))
    assert extracted is not None
    lines = extracted.splitlines()
    assert lines[0] == page.title
    assert "\n".join(lines[1:]) == page.text.replace("\n\n", "\n")
