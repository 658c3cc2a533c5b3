"""What identifies a URL in normal form: fingerprint, key, host, kind and path keys."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from libs.common.url_keys import (
    UrlKind,
    first_directory,
    key_fingerprint,
    key_text,
    normalized_fingerprint,
    normalized_fingerprints,
    normalized_host,
    section_key,
    trap_path_key,
    url_kind,
)
from libs.common.urls import normalize_url, url_fingerprint, url_key

RAW = [
    "http://A.Example/x",
    "https://user:pw@a.example:8443/p?q=1",
    "http://[::1]:8080/",
    "http://b.example",
    "http://B\u00fccher.example/a/b/",
    "http://1.2.3.4:81/?x=/y/",
    "https://c.example/news/2024/x.html#frag",
]
NORMAL = [normalize_url(u) for u in RAW]


def test_the_fingerprint_of_a_normal_form_is_the_url_fingerprint() -> None:
    assert [normalized_fingerprint(u) for u in NORMAL] == [url_fingerprint(u) for u in RAW]
    assert normalized_fingerprints(NORMAL) == [url_fingerprint(u) for u in RAW]
    assert normalized_fingerprints([]) == []


@pytest.mark.parametrize("url", NORMAL)
def test_the_host_of_a_normal_form_is_what_the_standard_parser_reads(url: str) -> None:
    assert normalized_host(url) == urlsplit(url).hostname


def test_text_without_a_scheme_has_no_host() -> None:
    assert normalized_host("17") == ""


KEYED_URLS = [f"http://h{i}.test/section/{i * 7919}/article.html?ref={i % 3}" for i in range(200)]


def test_keyed_urls_cover_both_signs_of_fingerprint() -> None:
    signs = {url_fingerprint(url) < 0 for url in KEYED_URLS}
    assert signs == {True, False}


@pytest.mark.parametrize("url", KEYED_URLS)
def test_the_key_spells_the_url_fingerprint(url: str) -> None:
    assert key_text(url_fingerprint(url)) == url_key(url)
    assert key_fingerprint(url_key(url)) == url_fingerprint(url)


@pytest.mark.parametrize(
    ("key", "fingerprint"),
    [
        ("0000000000000000", 0),
        ("7fffffffffffffff", 2**63 - 1),
        ("8000000000000000", -(2**63)),
        ("ffffffffffffffff", -1),
    ],
)
def test_the_edges_of_the_signed_range(key: str, fingerprint: int) -> None:
    assert key_fingerprint(key) == fingerprint
    assert key_text(fingerprint) == key


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://a.example/", UrlKind.HOME),
        ("https://a.example:8443/", UrlKind.HOME),
        ("http://a.example/news/", UrlKind.INDEX),
        ("http://a.example/news/world/", UrlKind.INDEX),
        ("http://a.example/news/1.html", UrlKind.PAGE),
        ("http://a.example/?page=2", UrlKind.PAGE),
        ("http://a.example/news/?page=2", UrlKind.PAGE),
        ("17", UrlKind.PAGE),
    ],
)
def test_url_kind(url: str, kind: UrlKind) -> None:
    assert url_kind(url) == kind


# (URL in normal form, first directory, section key, trap path key)
PATH_KEYS = [
    ("http://a.test/news/2024/x.html", "news", "a.test/news", "a.test/news"),
    ("http://a.test/news/", "news", "a.test/news", "a.test/news"),
    ("http://a.test/news", "", "a.test", "a.test/"),
    ("http://a.test/about.html", "", "a.test", "a.test/"),
    ("http://a.test/", "", "a.test", "a.test/"),
    # a dynamic page at the root: the host's section, but a trap path of its own
    ("http://a.test/calendar.php?m=3", "", "a.test", "a.test/calendar.php"),
    ("http://a.test/?m=3", "", "a.test", "a.test/"),
    ("http://a.test/news?page=/x/", "", "a.test", "a.test/news"),
    ("http://a.test/a/b?c", "a", "a.test/a", "a.test/a"),
    # the host, not the authority: no port, no user
    ("http://a.test:8080/news/x.html", "news", "a.test/news", "a.test/news"),
    ("http://u@a.test/news/x.html", "news", "a.test/news", "a.test/news"),
    ("http://[::1]:8080/news/x", "news", "::1/news", "::1/news"),
    ("https://site-001.test/news-2/story-0001.html", "news-2", "site-001.test/news-2", "site-001.test/news-2"),
]


@pytest.mark.parametrize(("url", "directory", "section", "trap"), PATH_KEYS)
def test_path_keys(url: str, directory: str, section: str, trap: str) -> None:
    assert normalize_url(url) == url
    assert first_directory(url) == directory
    assert section_key(url) == section
    assert trap_path_key(url) == trap
