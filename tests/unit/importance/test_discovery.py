"""URL kinds, hosts of normalised URLs and discovery weights."""

from __future__ import annotations

import pytest

from libs.common.urls import normalize_url, url_host
from services.importance.discovery import UNIFORM, DiscoveryWeights, UrlKind, url_host_of_normalized, url_kind


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


@pytest.mark.parametrize(
    "raw",
    ["http://A.Example/x", "https://user:pw@a.example:8443/p?q=1", "http://[::1]:8080/", "http://b.example"],
)
def test_host_of_a_normalised_url_matches_the_common_parser(raw: str) -> None:
    url = normalize_url(raw)
    assert url_host_of_normalized(url) == url_host(url)


def test_weights_grow_with_the_other_pages_of_the_site_for_home_and_index_pages_only() -> None:
    w = DiscoveryWeights(home=10.0, index=3.0, site_size_exponent=1.0)
    assert w.weight(UrlKind.HOME, 5) == 40.0  # the four other pages of the site link to it through its navigation
    assert w.weight(UrlKind.INDEX, 5) == 12.0
    assert w.weight(UrlKind.PAGE, 5) == 1.0
    assert w.weight(UrlKind.HOME, 1) == 0.0 == w.weight(UrlKind.HOME, 0)  # a site of one page: nothing links to it
    assert UNIFORM.weight(UrlKind.HOME, 1) == 1.0  # textbook AOPIC: every page alike
    assert UNIFORM.uniform and not w.uniform
    assert DiscoveryWeights(page=0.25).weight(UrlKind.PAGE, 5) == 0.25
    assert DiscoveryWeights(home=10.0, index=3.0, page=0.0).smallest == 3.0
    with pytest.raises(ValueError):
        DiscoveryWeights(home=0.0)
    with pytest.raises(ValueError):
        DiscoveryWeights(page=-1.0)
