"""The shared parse: trafilatura's parser options and repairs, a document for any input."""

from __future__ import annotations

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trafilatura.utils import load_html

from services.extractor.html_tree import parse_html


@pytest.mark.parametrize(
    "html",
    [
        "<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>Hello <!-- note --> world</p></body></html>",
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/x.dtd">\n'
        "<html><body><p>Hi</p></body></html>",
        "<html/>\n<head></head><body><p>self-closed html</p></body>",
        "<html><body><p>control\x01chars\x0b here</p></body></html>",
    ],
)
def test_same_tree_as_trafilatura_for_documents(html: str) -> None:
    ours = parse_html(html)
    theirs = load_html(html)
    assert theirs is not None
    assert lxml.html.tostring(ours) == lxml.html.tostring(theirs)


def test_fragments_and_declarations_become_documents() -> None:
    root = parse_html("<a href='/x'>x</a>")
    assert root is not None and root.tag == "html"
    assert [a.get("href") for a in root.iter("a")] == ["/x"]
    root = parse_html("<?xml version='1.0' encoding='utf-8'?><html><body><a href='/a'>a</a></body></html>")
    assert root is not None and root.tag == "html"


@pytest.mark.parametrize("html", ["", "   \n\t", "\x00\x01"])
def test_nothing_to_parse(html: str) -> None:
    assert parse_html(html) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_never_raises(html: str) -> None:
    parse_html(html)
