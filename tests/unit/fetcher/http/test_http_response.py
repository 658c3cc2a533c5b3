"""Header helpers of the fetcher's HTTP response."""

from __future__ import annotations

import pytest

from services.fetcher.http.http_response import HttpResponse, media_type, parse_retry_after

NOW = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("value", "date", "expected"),
    [
        ("120", None, 120.0),
        (" 0 ", None, 0.0),
        ("999999999", None, 86_400.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", None, 30.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", "Wed, 21 Oct 2015 07:28:20 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", None, 0.0),
        ("-5", None, None),
        ("soon", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_parse_retry_after(value: str | None, date: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, date, NOW) == expected


def test_media_type_and_error_helpers() -> None:
    assert media_type("Text/HTML; charset=UTF-8") == "text/html"
    assert media_type(None) == ""
    response = HttpResponse(url="u", final_url="u", status=0, error="connect_error:refused")
    assert response.error_code == "connect_error"
    assert response.is_network_error
    loop = HttpResponse(url="u", final_url="u", status=0, error="redirect_loop")
    assert not loop.is_network_error
    ok = HttpResponse(url="u", final_url="u", status=200, headers=[("Content-Type", "text/html")])
    assert ok.header("content-type") == "text/html"
    assert ok.header("missing") is None
