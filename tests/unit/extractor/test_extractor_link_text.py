"""Anchor text and context windows, read from each link's block."""

from __future__ import annotations

from typing import Any

from services.extractor.html_tree import parse_html
from services.extractor.link_text import LinkText


def _texts(html: str, anchor_limit: int = 256, context_chars: int = 40) -> list[tuple[str, str]]:
    root: Any = parse_html(html)
    reader = LinkText(anchor_limit, context_chars)
    return [reader.of(element) for element in root.iter("a")]


def test_anchor_includes_image_alt_and_skips_scripts() -> None:
    html = '<p>See <a href="/x">the <b>bold</b> <img src="i.png" alt="chart"><script>x()</script> here</a>.</p>'
    assert _texts(html) == [("the bold chart here", "See the bold chart here.")]


def test_context_stops_at_blocks_and_line_breaks() -> None:
    html = """<div>Intro text<p>Before the link <a href="/a">A</a> after it</p>Trailing text
      <table><tr><td>cell one</td><td>left <a href="/b">B</a> right</td></tr></table>
      top<br>line two <a href="/c">C</a> end<br>next line</div>"""
    assert _texts(html) == [
        ("A", "Before the link A after it"),
        ("B", "left B right"),
        ("C", "line two C end"),
    ]


def test_nested_inline_elements_and_tails() -> None:
    html = "<li><span>by <em>Ann</em></span> <a href='/p'><span>Profile</span></a> <small>(3 posts)</small></li>"
    assert _texts(html) == [("Profile", "by Ann Profile (3 posts)")]


def test_context_words_are_not_cut_in_the_middle() -> None:
    html = "<p>alpha beta gamma delta epsilon zeta eta theta <a href='/x'>link</a> iota kappa lambda mu nu xi</p>"
    anchor, context = _texts(html, context_chars=20)[0]
    assert anchor == "link"
    assert context == "zeta eta theta link iota kappa lambda"


def test_anchor_is_capped_and_context_can_be_off() -> None:
    html = f"<p>before <a href='/x'>{'long ' * 100}</a> after</p>"
    anchor, context = _texts(html, anchor_limit=20, context_chars=0)[0]
    assert len(anchor) == 20
    assert context == ""


def test_many_links_in_one_block_share_one_walk() -> None:
    html = "<div>" + " | ".join(f"<a href='/p{i}'>item {i}</a>" for i in range(500)) + "</div>"
    texts = _texts(html, context_chars=12)
    assert texts[0] == ("item 0", "item 0 | item 1 |")
    assert texts[250] == ("item 250", "item 249 | item 250 | item 251")
    assert texts[-1] == ("item 499", "item 498 | item 499")


def test_link_inside_a_skipped_element_still_has_its_text() -> None:
    assert _texts("<div><noscript><a href='/n'>No script</a></noscript></div>") == [("No script", "No script")]
