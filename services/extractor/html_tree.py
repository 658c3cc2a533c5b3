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
# Characters XML cannot hold (libxml2 stops or garbles at some of them), as trafilatura strips
# them: C0 controls but tab, newline and carriage return, and U+FFFE, U+FFFF (UTF-8 below).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_NONCHARACTERS = (b"\xef\xbf\xbe", b"\xef\xbf\xbf")
# libxml2 mis-parses some doctypes (lxml bug 1955915): trafilatura drops the doctype of the first line.
_DOCTYPE_TAG = re.compile(rb"^< ?! ?DOCTYPE[^>]*/[^<>]*>", re.IGNORECASE)
_SELF_CLOSED_HTML = re.compile(rb"(<html.*?)\s*/>", re.IGNORECASE)
_END_TAG_RE = re.compile(rb"</(?:body|html)\s*>", re.IGNORECASE)


def _repair(data: bytes) -> bytes:
    """trafilatura's repairs, on the UTF-8 bytes (a regex over a str costs 30 us on 9 KB; this 2)."""
    if len(data.translate(None, _CONTROL_BYTES)) != len(data):
        data = data.translate(None, _CONTROL_BYTES)
    if not data.isascii():
        for nonchar in _NONCHARACTERS:
            if nonchar in data:
                data = data.replace(nonchar, b"")
    end = _END_TAG_RE.search(data)
    if end is not None and _END_TAG_RE.sub(b"", data[end.start() :]).strip():
        # Content after </body> or </html>: libxml2 drops it, browsers move it into the body.
        data = data[: end.start()] + _END_TAG_RE.sub(b"", data[end.start() :])
    if b"doctype" in data[:50].lower():
        first, newline, rest = data.partition(b"\n")
        data = _DOCTYPE_TAG.sub(b"", first, count=1) + newline + rest
    for line in data[:4096].split(b"\n", 4)[:4]:
        if b"<html" in line and line.rstrip(b"\r").endswith(b"/>"):
            data = _SELF_CLOSED_HTML.sub(rb"\1>", data, count=1)
            break
    return data


def parse_html(html: str) -> Any:
    """The document's ``<html>`` element, or None when there is nothing to parse. Never raises."""
    if not html or html.isspace():
        return None
    data = _repair(html.encode("utf-8", "replace"))  # a lone surrogate becomes "?"
    try:
        return lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None
