"""The HTTP Link header."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.extractor.link_header import parse_link_header


def test_links_and_rels() -> None:
    values = [
        '<https://a.example/x>; rel="canonical", </page/2>; rel=next; title="Next, page"',
        "</feed>; type=\"application/rss+xml\"; rel='alternate'",
        "<https://cdn.example/app.css>;rel=preload;as=style",
        "<no-rel>; title=x",
        "garbage without brackets",
    ]
    assert parse_link_header(values) == [
        ("https://a.example/x", "canonical"),
        ("/page/2", "next"),
        ("/feed", "'alternate'"),
        ("https://cdn.example/app.css", "preload"),
    ]


def test_bounded() -> None:
    value = ", ".join(f"</p{i}>; rel=next" for i in range(1000))
    assert len(parse_link_header([value])) == 64


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=100), max_size=3))
def test_never_raises(values: list[str]) -> None:
    parse_link_header(values)
