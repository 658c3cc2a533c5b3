"""Records decoded for people: declared types to JSON, undecodable values shown, never raised."""

from __future__ import annotations

import zlib

from cli.topics.decode import decode_value, preview, to_json
from libs.common.topics import DEAD_LETTERS, FETCH_REQUESTS, FETCH_RESULTS
from libs.common.wire import messages as pb


def test_a_message_decodes_to_its_fields_with_native_numbers_and_enum_names() -> None:
    outcome = pb.FetchOutcome(url="http://a.test/", host="a.test", status=pb.FETCH_STATUS_OK, http_status=200,
                              fetched_at_ms=1_700_000_000_123)
    assert to_json(outcome) == {"url": "http://a.test/", "host": "a.test", "status": "FETCH_STATUS_OK",
                                "http_status": 200, "fetched_at_ms": 1_700_000_000_123}
    links = pb.PageLinks(url="http://a.test/", links=[pb.Link(url="http://b.test/", link_class=pb.LINK_CLASS_EXTERNAL)])
    assert to_json(links)["links"] == [{"url": "http://b.test/", "link_class": "LINK_CLASS_EXTERNAL"}]


def test_long_strings_are_cut_unless_full() -> None:
    doc = pb.Document(url="http://a.test/", text="x" * 500)
    assert to_json(doc, max_chars=10)["text"] == "x" * 10 + "... (+490 chars)"
    assert to_json(doc, max_chars=None)["text"] == "x" * 500


def test_undecodable_values_are_reported_with_a_preview() -> None:
    out = decode_value(b"\xff\xfe not protobuf", FETCH_REQUESTS)
    assert out["type"] == "FetchRequest"
    assert "not a FetchRequest" in out["undecodable"]
    assert out["value_preview"].startswith("ff fe")
    assert "value" not in out
    assert decode_value(None, FETCH_REQUESTS)["undecodable"] == "empty value (tombstone)"
    assert preview(b"plain text") == "plain text"


def test_a_value_of_another_type_is_flagged_by_its_unknown_fields() -> None:
    raw = pb.Document(url="http://a.test/", text="hello", published_at_ms=5).SerializeToString()
    out = decode_value(raw, FETCH_REQUESTS)
    assert out["unknown_fields"] >= 1


def test_undeclared_topics_show_bytes() -> None:
    out = decode_value(b"abc", None)
    assert out["type"] is None and out["value_preview"] == "abc"


def test_a_fetch_result_body_is_inflated_and_a_dead_letter_value_decoded() -> None:
    html = b"<html><body>hello</body></html>"
    result = pb.FetchResult(url="http://a.test/", body=zlib.compress(html), body_codec="zlib")
    assert decode_value(result.SerializeToString(), FETCH_RESULTS)["value"]["body_text"] == html.decode()

    failed = pb.FetchRequest(request_id="r1", url="http://a.test/x", host="a.test")
    letter = pb.DeadLetter(source_topic="pre.trawl.fetch-requests", key=b"a.test", value=failed.SerializeToString())
    value = decode_value(letter.SerializeToString(), DEAD_LETTERS)["value"]
    assert value["key_text"] == "a.test"
    assert value["value_decoded"]["value"] == {"request_id": "r1", "url": "http://a.test/x", "host": "a.test"}
