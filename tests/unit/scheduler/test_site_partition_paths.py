"""The path of a URL: host plus its first path segment when that is a directory."""

from __future__ import annotations

import pytest

from services.scheduler.site_partition.paths import first_segment, url_path


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("http://today.hit.edu.cn/articles/1/2.html", "today.hit.edu.cn/articles"),
        ("http://www.hit.edu.cn/index.html", "www.hit.edu.cn/"),
        ("http://www.hit.edu.cn", "www.hit.edu.cn/"),
        ("http://www.hit.edu.cn/", "www.hit.edu.cn/"),
        ("http://Site.Example:8080/news/", "site.example:8080/news"),
        ("http://site.example/news?page=/x/", "site.example/"),
        ("http://site.example/a/b?c#d", "site.example/a"),
        ("https://site.example/news#/x/", "site.example/"),
    ],
)
def test_url_path(url: str, path: str) -> None:
    assert url_path(url) == path


def test_first_segment() -> None:
    assert first_segment("http://h/a/b/c") == "a"
    assert first_segment("http://h/a") == ""
    assert first_segment("http://h") == ""
