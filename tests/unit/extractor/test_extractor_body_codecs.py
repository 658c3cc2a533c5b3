"""Fetch results as the fetcher encodes them, today's and older messages alike, extract the same."""

from __future__ import annotations

import zlib

import pytest

from libs.common.errors import PoisonMessage
from libs.common.wire import messages as pb
from services.extractor.page_extractor import extract_page
from services.fetcher.publish.result_body import encode_body

PAGE = ("<html><head><title>Rates</title></head><body><article><h1>Rates</h1>"
        + "<p>The harbour board set the mooring rates for next season after a long meeting.</p>" * 40
        + '<a href="HTTP://Harbour.EXAMPLE.org:80/rates/../fees?utm_source=board&amp;fbclid=1&amp;y=2#top">Fees</a>'
        + "</article></body></html>").encode()


def result(body: bytes, codec: str) -> pb.FetchResult:
    return pb.FetchResult(
        url="https://harbour.example.org/news", final_url="https://harbour.example.org/news",
        host="harbour.example.org", status=pb.FETCH_STATUS_OK, http_status=200, body=body, body_codec=codec,
        body_size=len(PAGE), content_type="text/html; charset=utf-8", fetched_at_ms=1_750_000_000_000,
        headers=[pb.Header(name="Content-Type", value="text/html; charset=utf-8")],
    )


@pytest.mark.parametrize("encoded", [
    pytest.param(encode_body(PAGE), id="identity: the fetcher's default"),
    pytest.param(encode_body(PAGE, "zlib"), id="zlib: the fetcher's setting, and older messages"),
    pytest.param(encode_body(PAGE, "identity", room=len(PAGE) - 1), id="zlib: too big for the message as it is"),
    pytest.param((zlib.compress(PAGE, 9), "zlib"), id="zlib at another level"),
    pytest.param((PAGE, ""), id="no codec named: identity"),
])
def test_every_codec_extracts_the_same_page(encoded: tuple[bytes, str]) -> None:
    out = extract_page(result(*encoded))
    assert out.document.title == "Rates" and "mooring rates" in out.document.text
    # a link enters the system in normal form: host lower-cased, default port, dot segments, tracking gone
    assert [link.url for link in out.links.links] == ["http://harbour.example.org/fees?y=2"]


def test_an_unknown_codec_is_a_poison_message() -> None:
    with pytest.raises(PoisonMessage, match="unknown body codec 'lz4'"):
        extract_page(result(PAGE, "lz4"))
