"""One sitemap file parsed incrementally, in bounded memory and time.

:func:`parse_sitemap` inflates a gzip body (``.xml.gz``) a chunk at a time and feeds
each chunk to lxml's parser with a *target* (:class:`_LocTarget`): no tree is built at
all, so memory does not grow with the file, however many elements it holds (a tree of
the 13 million elements of a 53 KB gzip bomb took 1.7 GB). The target keeps the open
elements' names and the text of the ``<loc>`` being read, nothing else. Entities are
not resolved, DTDs not loaded, the network never used; libxml2's default limits (no
``huge_tree``) bound nesting depth and the size of one text node.

Reading stops at the first limit of :class:`SitemapLimits` it reaches, and the content
says which (:attr:`SitemapContent.cut`): decoded bytes, elements, page URLs of the file,
sitemaps an index lists. What was read before it is kept, as it is when the XML is
malformed (``malformed``). The call is synchronous and CPU-bound: the reader runs it in a
thread of its own (:mod:`services.fetcher.sitemaps.sitemaps`), and ``stop`` ends it between chunks.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, field

from lxml import etree

__all__ = [
    "CUT_DECODED_BYTES",
    "CUT_ELEMENTS",
    "CUT_INDEX_CHILDREN",
    "CUT_MALFORMED",
    "CUT_STOPPED",
    "CUT_URLS_PER_FILE",
    "MAX_SITEMAP_BYTES",
    "SitemapContent",
    "SitemapLimits",
    "parse_sitemap",
]

MAX_SITEMAP_BYTES = 50 * 1024 * 1024
"""Largest decoded sitemap read (the sitemaps.org limit)."""
MAX_LOC_CHARS = 8192
"""A ``<loc>`` longer than this is no URL the crawler would take: skipped."""

# Why a file was not read to its end (SitemapContent.cut, and the reason label of the counter).
CUT_DECODED_BYTES = "decoded_bytes"
CUT_ELEMENTS = "elements"
CUT_URLS_PER_FILE = "urls_per_file"
CUT_INDEX_CHILDREN = "index_children"
CUT_MALFORMED = "malformed"
CUT_STOPPED = "stopped"


@dataclass(frozen=True)
class SitemapLimits:
    """Caps on one sitemap file (the defaults are those of the fetcher's settings)."""

    max_decoded_bytes: int = MAX_SITEMAP_BYTES
    """Decoded (inflated) bytes read."""
    max_elements: int = 1_000_000
    """XML elements read: 50,000 URLs with ``loc``, ``lastmod``, ``changefreq``, ``priority`` are 250,000."""
    max_urls: int = 50_000
    """Page URLs taken (the sitemaps.org limit per file)."""
    max_index_children: int = 1_000
    """Sitemaps taken from one sitemap index."""
    chunk_bytes: int = 64 * 1024
    """Decoded bytes fed to the parser at a time (the limits are checked between chunks)."""


@dataclass
class SitemapContent:
    """Page URLs (``<urlset>``) and nested sitemap URLs (``<sitemapindex>``) of one sitemap file.

    ``cut`` is ``""`` when the file was read to its end, else why reading stopped (a ``CUT_*`` code).
    """

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    cut: str = ""
    decoded_bytes: int = 0
    elements: int = 0


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


class _LocTarget:
    """lxml parser target: collects the text of ``<loc>`` under ``<url>`` or ``<sitemap>``, builds nothing."""

    def __init__(self, content: SitemapContent, limits: SitemapLimits) -> None:
        self._content = content
        self._limits = limits
        self._path: list[str] = []
        self._text: list[str] | None = None  # the <loc> being read
        self._text_chars = 0
        self.cut = ""

    def start(self, tag: object, attrib: object, nsmap: object = None) -> None:
        local = _local(tag)
        if local == "loc":
            self._text, self._text_chars = [], 0
        self._path.append(local)
        self._content.elements += 1
        if self._content.elements > self._limits.max_elements and not self.cut:
            self.cut = CUT_ELEMENTS

    def data(self, text: str) -> None:
        if self._text is not None:
            self._text_chars += len(text)
            if self._text_chars <= MAX_LOC_CHARS:
                self._text.append(text)

    def end(self, tag: object) -> None:
        if self._path:
            self._path.pop()
        if self._text is None or _local(tag) != "loc":
            return
        text = "".join(self._text).strip() if self._text_chars <= MAX_LOC_CHARS else ""
        self._text = None
        parent = self._path[-1] if self._path else ""
        content, limits = self._content, self._limits
        if not text or self.cut:
            return
        if parent == "sitemap":
            if len(content.sitemaps) >= limits.max_index_children:
                self.cut = CUT_INDEX_CHILDREN
            else:
                content.sitemaps.append(text)
        elif parent == "url":
            if len(content.urls) >= limits.max_urls:
                self.cut = CUT_URLS_PER_FILE
            else:
                content.urls.append(text)

    def comment(self, text: str) -> None:
        """Comments are ignored."""

    def pi(self, target: str, data: str | None = None) -> None:
        """Processing instructions are ignored."""

    def close(self) -> None:
        """Nothing to hand back: the content is filled in as the parser goes."""


class _Inflater:
    """The decoded bytes of ``body`` a chunk at a time: inflated if it is gzip, else as they are."""

    def __init__(self, body: bytes, chunk_bytes: int) -> None:
        self._body = memoryview(body)
        self._chunk = chunk_bytes
        self._offset = 0
        self._inflater = zlib.decompressobj(31) if body[:2] == b"\x1f\x8b" else None
        self._pending = b""

    def next(self, limit: int) -> bytes:
        """Up to ``min(limit, chunk_bytes)`` further decoded bytes; ``b""`` at the end (or on corrupt gzip)."""
        size = min(limit, self._chunk)
        if size <= 0:
            return b""
        if self._inflater is None:
            out = bytes(self._body[self._offset:self._offset + size])
            self._offset += len(out)
            return out
        try:
            while True:
                source = self._pending or bytes(self._body[self._offset:self._offset + self._chunk])
                if not self._pending:
                    self._offset += len(source)
                if not source:
                    return b""
                out = self._inflater.decompress(source, size)
                self._pending = self._inflater.unconsumed_tail
                if out or self._inflater.eof:
                    return out
        except zlib.error:
            return b""

    def exhausted(self) -> bool:
        """Whether every decoded byte was handed out."""
        if self._inflater is None:
            return self._offset >= len(self._body)
        return self._inflater.eof or (not self._pending and self._offset >= len(self._body))


def parse_sitemap(body: bytes, limits: SitemapLimits | None = None,
                  stop: threading.Event | None = None) -> SitemapContent:
    """The ``<loc>`` entries of a sitemap or sitemap index (gzip accepted), read within ``limits``.

    Never raises for bad content: malformed XML or gzip gives what was read before the fault.
    ``stop``, when set (from another thread), ends the read before the next chunk.
    """
    limits = limits or SitemapLimits()
    content = SitemapContent()
    target = _LocTarget(content, limits)
    parser = etree.XMLParser(target=target, resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False)
    source = _Inflater(body, limits.chunk_bytes)
    fed = False
    try:
        while not target.cut:
            if stop is not None and stop.is_set():
                content.cut = CUT_STOPPED
                return content
            chunk = source.next(limits.max_decoded_bytes - content.decoded_bytes)
            if not chunk:
                if content.decoded_bytes >= limits.max_decoded_bytes and not source.exhausted():
                    target.cut = CUT_DECODED_BYTES
                break
            content.decoded_bytes += len(chunk)
            if not fed and not chunk.strip():  # leading blanks: an empty body is no malformed XML
                continue
            fed = True
            parser.feed(chunk)
        if fed and not target.cut:
            parser.close()
    except etree.XMLSyntaxError:
        target.cut = target.cut or CUT_MALFORMED
    content.cut = target.cut
    return content
