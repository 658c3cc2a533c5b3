"""Anchor text and surrounding context of the ``<a>`` elements of a parsed page.

A link's context is the text around it in its block: the nearest enclosing
block element (``<p>``, ``<li>``, ``<td>``, a heading, ``<div>``...), a few
words before and after the anchor, never crossing into another block or a
``<br>``. BeeBot keeps this "anchor context" with every external link; it
says what a link is about better than the anchor alone ("read more").

Each block's text is built once, in one walk that skips nested blocks (their
own links have their own block), so the cost is linear in the size of the
blocks that hold links, whatever the number of links.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lxml.etree

__all__ = ["BLOCK_TAGS", "LinkText"]

BLOCK_TAGS = frozenset(
    {"address", "article", "aside", "blockquote", "body", "dd", "details", "dialog", "div", "dl", "dt"}
    | {"fieldset", "figcaption", "figure", "footer", "form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6"}
    | {"header", "hgroup", "html", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary"}
    | {"table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "caption", "noframes", "center"}
)
_SKIPPED = frozenset({"script", "style", "template", "noscript", "select", "textarea", "head", "title"})
_BREAK = "\x1e"  # a block boundary in a block's text; never in parsed text (XML forbids it)


def _collapse(text: str) -> str:
    return " ".join(text.split())  # str.split() splits on _BREAK too (an ASCII separator)


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    spans: dict[Any, tuple[int, int]]  # <a> element -> (start, end) of its text in ``text``


def _enclosing_block(element: Any) -> Any:
    node = element.getparent()
    last = element
    while node is not None:
        if node.tag in BLOCK_TAGS:
            return node
        last, node = node, node.getparent()
    return last


def _block_text(block: Any) -> _Block:
    """The text of ``block`` without nested blocks (a break stands for each), with the spans of its links."""
    parts: list[str] = []
    size = 0
    open_links: list[tuple[Any, int]] = []
    spans: dict[Any, tuple[int, int]] = {}
    # Comments and processing instructions are gone from trees of parse_html (the parser drops
    # them, their tails merged into the text around); any other node without a str tag is skipped.
    walker = lxml.etree.iterwalk(block, events=("start", "end"))
    for event, node in walker:
        tag = node.tag
        if not isinstance(tag, str):
            continue
        if event == "start":
            if node is not block and (tag in BLOCK_TAGS or tag in _SKIPPED):
                walker.skip_subtree()  # its "end" event still comes, for its tail
                if tag in BLOCK_TAGS:
                    parts.append(_BREAK)
                    size += 1
                continue
            if tag == "a":
                open_links.append((node, size))
            elif tag == "br":
                parts.append(_BREAK)
                size += 1
            elif tag == "img" and open_links:
                alt = node.get("alt")
                if alt:
                    parts.append(f" {alt} ")
                    size += len(alt) + 2
            if node.text and tag not in _SKIPPED:
                parts.append(node.text)
                size += len(node.text)
            continue
        if tag == "a" and open_links and open_links[-1][0] is node:
            spans[node] = (open_links.pop()[1], size)
        if node is block:
            break
        if tag in BLOCK_TAGS:
            parts.append(_BREAK)
            size += 1
        if node.tail:
            parts.append(node.tail)
            size += len(node.tail)
    return _Block("".join(parts), spans)


def _words_before(text: str, limit: int) -> str:
    """The last ``limit`` characters of collapsed ``text``, cut at a word boundary."""
    collapsed = _collapse(text[-limit * 4 :])
    if len(collapsed) <= limit:
        return collapsed
    cut = collapsed[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < len(cut) - 1 else cut


def _words_after(text: str, limit: int) -> str:
    collapsed = _collapse(text[: limit * 4])
    if len(collapsed) <= limit:
        return collapsed
    cut = collapsed[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


class LinkText:
    """Anchor and context of ``<a>`` elements of one tree, each block's text computed once."""

    def __init__(self, anchor_limit: int, context_chars: int) -> None:
        self._anchor_limit = anchor_limit
        self._context_chars = context_chars
        self._blocks: dict[Any, _Block] = {}

    def of(self, element: Any) -> tuple[str, str]:
        """``(anchor, context)`` of an ``<a>`` element; context is "" when it is turned off."""
        parent = element.getparent()
        if (  # the commonest case, a menu entry <li><a>Text</a></li>: the anchor is the whole block
            len(element) == 0
            and parent is not None
            and parent.tag in BLOCK_TAGS
            # the only child; not len(parent) == 1, which counts all of the parent's children: once
            # per link, that made a page of many sibling links quadratic (20,000 links: 50 s)
            and element.getprevious() is None
            and element.getnext() is None
            and not (parent.text and not parent.text.isspace())
            and not (element.tail and not element.tail.isspace())
        ):
            anchor = _collapse(element.text or "")[: self._anchor_limit]
            return anchor, anchor if self._context_chars else ""
        block_element = _enclosing_block(element)
        block = self._blocks.get(block_element)
        if block is None:
            block = self._blocks[block_element] = _block_text(block_element)
        span = block.spans.get(element)
        if span is None:  # an <a> inside a skipped element, say a <noscript>: its own text only
            anchor = _collapse(element.text_content())[: self._anchor_limit]
            return anchor, anchor if self._context_chars else ""
        start, end = span
        text = block.text
        anchor = _collapse(text[start:end])[: self._anchor_limit]
        if not self._context_chars:
            return anchor, ""
        before = text[:start]
        before = before[before.rfind(_BREAK) + 1 :]
        after = text[end:]
        stop = after.find(_BREAK)
        if stop != -1:
            after = after[:stop]
        raw = text[start:end]
        context = _words_before(before, self._context_chars)
        if context and (before[-1:].isspace() or raw[:1].isspace()):
            context += " "
        context += anchor
        rest = _words_after(after, self._context_chars)
        if rest and context and (raw[-1:].isspace() or after[:1].isspace()):
            context += " "
        return anchor, context + rest
