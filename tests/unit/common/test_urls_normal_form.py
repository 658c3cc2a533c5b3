"""The short path of normalisation: a URL visibly in normal form already is taken as it is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from libs.common.urls import (
    DEFAULT_POLICY,
    InvalidUrl,
    UrlPolicy,
    host_if_normal,
    install_policy,
    normal_form,
    normalize_url,
    url_host,
)

_FAST = r"https?://(?:[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?\.){1,3}[a-z]{2,6}(?:/[A-Za-z0-9._~!$&'()*+,=:@%;?#-]{0,12}){1,4}"


@settings(max_examples=2000, deadline=None)
@given(st.from_regex(_FAST, fullmatch=True))
def test_the_short_path_agrees_with_the_normaliser(url: str) -> None:
    try:
        expected = normalize_url(url)
    except InvalidUrl:
        return
    assert normal_form(url) == expected
    host = host_if_normal(url)
    assert host is None or (url, host) == (expected, url_host(expected))


def test_urls_not_visibly_normal_take_the_normaliser() -> None:
    for raw, normal in (("http://a.test/./x", "http://a.test/x"), ("http://A.test/x", "http://a.test/x"),
                        ("http://a.test:80/x", "http://a.test/x"), ("http://a.test/x?utm_source=y", "http://a.test/x"),
                        ("http://0x7f.1/x", "http://127.0.0.1/x"), ("http://a.test/%7Ex", "http://a.test/~x")):
        assert normal_form(raw) == normal


def test_the_short_path_follows_the_installed_policy() -> None:
    long_url = "http://a.test/" + "x" * 100
    install_policy(UrlPolicy(max_length=50, allowed_schemes=("https",)))
    try:
        for url in (long_url, "http://a.test/short"):
            try:
                normal_form(url)
            except InvalidUrl:
                continue
            raise AssertionError(f"{url} passed a policy that refuses it")
    finally:
        install_policy(DEFAULT_POLICY)
    assert normal_form(long_url) == long_url
