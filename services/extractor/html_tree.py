"""One lenient parse of a page, shared by link extraction and trafilatura.

The page is parsed once: links are read from the tree, then the same tree is
handed to trafilatura's ``bare_extraction`` (which copies a tree it is given
before changing it). The parser options and the repairs made before parsing
are trafilatura's own (``trafilatura.utils.HTML_PARSER`` and
``repair_faulty_html``), so trafilatura sees the tree it would have built
from the string. One difference, on purpose: a fragment (``<a href=x>x</a>``
with no ``<html>``) still becomes a document here, where trafilatura's loader
rejects it, because its links are worth keeping; and content after ``</html>``
(appended by a CMS, injected by a proxy) goes into the body as browsers put it,
where libxml2 would drop it.
"""

from __future__ import annotations

import re
from typing import Any

import lxml.etree
import lxml.html

__all__ = ["parse_html"]

_PARSER = lxml.html.HTMLParser(
    collect_ids=False,
    default_doctype=False,
    encoding="utf-8",
    remove_comments=True,
    remove_pis=True,
    no_network=True,
)
# Characters XML cannot hold (libxml2 stops or garbles at some of them), as trafilatura strips them.
_INVALID_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# libxml2 mis-parses some doctypes (lxml bug 1955915): trafilatura drops the doctype of the first line.
_DOCTYPE_TAG = re.compile(r"^< ?! ?DOCTYPE[^>]*/[^<>]*>", re.IGNORECASE)
_SELF_CLOSED_HTML = re.compile(r"(<html.*?)\s*/>", re.IGNORECASE)
_END_TAG_RE = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)


def _repair(html: str) -> str:
    if _INVALID_XML_CHARS.search(html):
        html = _INVALID_XML_CHARS.sub("", html)
    end = _END_TAG_RE.search(html)
    if end is not None and _END_TAG_RE.sub("", html[end.start() :]).strip():
        # Content after </body> or </html>: libxml2 drops it, browsers move it into the body.
        html = html[: end.start()] + _END_TAG_RE.sub("", html[end.start() :])
    if "doctype" in html[:50].lower():
        first, newline, rest = html.partition("\n")
        html = _DOCTYPE_TAG.sub("", first, count=1) + newline + rest
    for line in html[:4096].splitlines()[:4]:
        if "<html" in line and line.endswith("/>"):
            html = _SELF_CLOSED_HTML.sub(r"\1>", html, count=1)
            break
    return html


def parse_html(html: str) -> Any:
    """The document's ``<html>`` element, or None when there is nothing to parse. Never raises."""
    if not html or html.isspace():
        return None
    data = _repair(html).encode("utf-8", "replace")
    try:
        return lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None
