"""Which URLs of a redirected fetch are announced as discoveries."""

from __future__ import annotations

from services.fetcher.http.http_response import HttpResponse
from services.fetcher.publish.discoveries import redirect_targets


def test_the_hops_after_the_first_and_the_final_url() -> None:
    response = HttpResponse(
        url="http://a.test/x", final_url="http://b.test/z", status=200,
        redirect_chain=["http://a.test/x", "http://A.test/y?utm_source=feed"],
    )
    assert redirect_targets(response) == ["http://A.test/y?utm_source=feed", "http://b.test/z"]


def test_a_fetch_without_redirects_announces_nothing() -> None:
    assert redirect_targets(HttpResponse(url="http://a.test/", final_url="http://a.test/", status=200)) == []


def test_a_refused_redirect_announces_its_target() -> None:
    response = HttpResponse(
        url="http://a.test/x", final_url="http://a.test/x", status=0,
        error="disallowed_redirect:http://a.test/private/1", redirect_chain=["http://a.test/x"],
    )
    assert redirect_targets(response) == ["http://a.test/x", "http://a.test/private/1"]
