"""The fetch result message: its body codec, and never larger than the producer's largest message."""

from __future__ import annotations

import random
import zlib
from typing import Any, cast

from libs.common.wire import messages as pb
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.worker import FetchWorker

HTML = b"<html><body>" + b"<p>a paragraph of the page, and another</p>" * 3000 + b"</body></html>"
NOISE = random.Random(9).randbytes(200_000)
REQUEST = pb.FetchRequest(url="http://a.test/p", host="a.test", request_id="r1", depth=3)


def worker(**options: Any) -> FetchWorker:
    return FetchWorker(cast(Any, None), cast(Any, None), cast(Any, None), **options)  # only messages are built


def response(body: bytes) -> HttpResponse:
    headers = [("Content-Type", "text/html"), ("X-Filler", "x" * 5000)]
    return HttpResponse(url="http://a.test/p", final_url="http://a.test/p", status=200, headers=headers, body=body,
                        content_type="text/html")


def message(w: FetchWorker, body: bytes) -> pb.FetchResult:
    return w.result_message(REQUEST, response(body), pb.FETCH_STATUS_OK, "", 1, 2)


def test_bodies_travel_as_fetched_by_default() -> None:
    result = message(worker(), HTML)
    assert (result.body, result.body_codec, result.body_size, result.truncated) == (HTML, "identity", len(HTML), False)
    assert result.depth == 3 and result.headers[1].value == "x" * 5000


def test_the_zlib_setting_compresses() -> None:
    result = message(worker(body_codec="zlib"), HTML)
    assert result.body_codec == "zlib" and zlib.decompress(result.body) == HTML


def test_a_body_too_big_for_the_message_is_compressed_to_fit() -> None:
    limit = len(HTML)  # the body alone fits, not with the headers and the rest
    result = message(worker(max_message_bytes=limit), HTML)
    assert result.body_codec == "zlib" and zlib.decompress(result.body) == HTML and not result.truncated
    assert result.ByteSize() <= limit


def test_a_body_that_does_not_fit_even_compressed_is_cut_and_flagged() -> None:
    limit = 100_000
    result = message(worker(max_message_bytes=limit), NOISE)
    assert result.body_codec == "identity" and result.truncated and result.body_size == len(NOISE)
    assert NOISE.startswith(result.body) and limit - 100 <= result.ByteSize() <= limit
