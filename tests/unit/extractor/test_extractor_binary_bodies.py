"""Binary bodies served as HTML are recorded as binary, whatever byte order mark they start with."""

from __future__ import annotations

import codecs
import random

from libs.common.wire import messages as pb
from services.extractor.page_extractor import ExtractionOptions, extract_page

URL = "http://site.test/page.html"


def result(body: bytes) -> pb.FetchResult:
    return pb.FetchResult(url=URL, final_url=URL, host="site.test", status=pb.FETCH_STATUS_OK, http_status=200,
                          headers=[pb.Header(name="Content-Type", value="text/html")], body=body,
                          body_codec="identity", body_size=len(body), content_type="text/html",
                          fetched_at_ms=1_750_000_000_000, depth=1)


def test_random_bytes_behind_a_utf16_byte_order_mark_are_a_binary_body() -> None:
    noise = codecs.BOM_UTF16_LE + random.Random(5).randbytes(1_381_458)  # was 690,729 characters of text
    extracted = extract_page(result(noise), ExtractionOptions())
    assert extracted.document.extraction_error == "not_html:binary_body"
    assert extracted.document.text == "" and list(extracted.links.links) == []


def test_utf16_html_is_still_read() -> None:
    page = ('<html><head><title>Hallo</title></head>'
            '<body><p>Gr\u00fc\u00dfe <a href="/next">weiter</a></p></body></html>')
    for body in (codecs.BOM_UTF16_LE + page.encode("utf-16-le"), page.encode("utf-16-be")):
        extracted = extract_page(result(body), ExtractionOptions())
        assert not extracted.document.extraction_error.startswith("not_html")
        assert [link.url for link in extracted.links.links] == ["http://site.test/next"]
