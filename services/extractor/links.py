"""Out-links of an HTML page, with anchors, classes and robots directives.

Links come from ``<a href>`` and ``<area href>`` and are resolved against
``<base href>`` (when present and valid) or the page URL, then normalised
with :func:`libs.common.urls.normalize_url`. Each link is classed:

* ``internal``: same registered domain as the page (``blog.example.com``
  and ``www.example.com`` are internal to each other);
* ``external``: another registered domain;
* ``bad``: not crawlable (``javascript:``, ``mailto:``, malformed, too long);
  the raw ``href`` is kept (capped) with the normaliser's reason code.

Links are deduplicated by normalised URL (bad links by raw ``href``). The
first occurrence fixes the position; its anchor is the first non-empty
anchor met for that URL (an image link without ``alt`` followed by a text
link to the same page keeps the text), and the link is ``nofollow`` only if
every occurrence is. A link's ``nofollow`` also includes the page-level
``<meta name="robots" content="nofollow">``, which is reported on its own as
well. Extraction is bounded: at most ``max_links`` distinct links, hrefs
longer than ``max_href_length`` are bad (``too_long``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import lxml.etree
import lxml.html

from libs.common.urls import DEFAULT_POLICY, InvalidUrl, UrlPolicy, normalize_url, registered_domain

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_ANCHOR_LENGTH",
    "MAX_HREF_LENGTH",
    "MAX_LINKS",
    "ExtractedLink",
    "LinkClass",
    "PageLinkSet",
    "RobotsDirectives",
    "extract_links",
    "parse_robots_directives",
    "parse_x_robots_tag",
]

MAX_LINKS = 5000
MAX_HREF_LENGTH = 8192
MAX_ANCHOR_LENGTH = 256

LinkClass = Literal["internal", "external", "bad"]

_WHITESPACE_RE = re.compile(r"\s+")
_SKIPPED_TEXT_TAGS = frozenset({"script", "style", "template", "noscript"})
# Directives of the X-Robots-Tag header that carry a value after a colon.
_VALUED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


@dataclass(frozen=True)
class ExtractedLink:
    """One out-link; ``url`` is normalised, or the raw (capped) ``href`` of a bad link."""

    url: str
    anchor: str
    link_class: LinkClass
    bad_reason: str
    nofollow: bool


@dataclass(frozen=True)
class PageLinkSet:
    """The links of one page and the page-level directives that govern them.

    ``base_url`` is the URL relative links were resolved against;
    ``truncated`` says that ``max_links`` cut the list short.
    """

    links: list[ExtractedLink]
    meta_nofollow: bool
    meta_noindex: bool
    canonical_url: str | None
    base_url: str
    truncated: bool = field(default=False)


class RobotsDirectives(NamedTuple):
    """What a robots meta tag or X-Robots-Tag header forbids."""

    noindex: bool
    nofollow: bool


def parse_robots_directives(content: str) -> RobotsDirectives:
    """Parse the comma-separated directives of ``<meta name="robots" content=...>``."""
    noindex = nofollow = False
    for raw in content.split(","):
        directive = raw.strip().lower()
        if directive in ("noindex", "none"):
            noindex = True
        if directive in ("nofollow", "none"):
            nofollow = True
    return RobotsDirectives(noindex, nofollow)


def parse_x_robots_tag(value: str, *, agent: str = "trawl") -> RobotsDirectives:
    """Parse an ``X-Robots-Tag`` header value (several headers may be joined with commas).

    Directives after ``<name>:`` apply only to the crawler named ``name``;
    those addressed to another crawler are ignored, those addressed to
    ``agent`` (case-insensitive) or to nobody apply.
    """
    noindex = nofollow = False
    current: str | None = None
    agent = agent.lower()
    for raw in value.split(","):
        directive = raw.strip().lower()
        head, sep, rest = directive.partition(":")
        if sep and head.strip() not in _VALUED_DIRECTIVES:
            current = head.strip()
            directive = rest.strip()
        if current is not None and current != agent:
            continue
        if directive in ("noindex", "none"):
            noindex = True
        if directive in ("nofollow", "none"):
            nofollow = True
    return RobotsDirectives(noindex, nofollow)


def _collapse(text: str, limit: int) -> str:
    return _WHITESPACE_RE.sub(" ", text).strip()[:limit]


def _anchor_text(element: Any, limit: int) -> str:
    """Visible text of an ``<a>`` in document order, with ``<img alt>`` standing in for images."""
    parts: list[str] = []
    size = 0
    budget = limit * 4  # enough raw text to fill ``limit`` after whitespace collapsing
    for event, node in lxml.etree.iterwalk(element, events=("start", "end", "comment", "pi")):
        if event in ("comment", "pi"):  # reported once: only their tail is text
            if node.tail:
                parts.append(node.tail)
                size += len(node.tail)
            continue
        if event == "start":
            if node.tag == "img":
                alt = node.get("alt")
                if alt:
                    parts.append(f" {alt} ")
                    size += len(alt)
            if node.text and node.tag not in _SKIPPED_TEXT_TAGS:
                parts.append(node.text)
                size += len(node.text)
        elif node is not element and node.tail:
            parts.append(node.tail)
            size += len(node.tail)
        if size > budget:
            break
    return _collapse("".join(parts), limit)


def _parse(html: str) -> Any:
    """Parse HTML leniently; None when there is no document at all."""
    data = html.encode("utf-8", "replace")
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=False, no_network=True)
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except (lxml.etree.ParserError, ValueError):
        return None


@dataclass
class _Entry:
    url: str
    anchor: str
    link_class: LinkClass
    bad_reason: str
    nofollow: bool


class _Collector:
    """Deduplicating, bounded accumulator of links."""

    def __init__(self, page_domain: str, max_links: int) -> None:
        self.page_domain = page_domain
        self.max_links = max_links
        self.entries: dict[str, _Entry] = {}
        self.truncated = False

    def add(self, key: str, make: Callable[[], _Entry], anchor: str, nofollow: bool) -> bool:
        """Record one occurrence; ``make()`` builds the entry on first sight. False when full."""
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.max_links:
                self.truncated = True
                return False
            self.entries[key] = make()
            return True
        if not entry.anchor and anchor:
            entry.anchor = anchor
        entry.nofollow = entry.nofollow and nofollow
        return True


def extract_links(
    html: str,
    base_url: str,
    policy: UrlPolicy = DEFAULT_POLICY,
    *,
    max_links: int = MAX_LINKS,
    max_href_length: int = MAX_HREF_LENGTH,
    max_anchor_length: int = MAX_ANCHOR_LENGTH,
) -> PageLinkSet:
    """Extract the out-links of the page ``html`` fetched from ``base_url`` (see the module docstring)."""
    try:
        page_url = normalize_url(base_url, policy=policy)
    except InvalidUrl:
        page_url = base_url
    page_domain = _domain_of(page_url)
    root = _parse(html)
    if root is None:
        return PageLinkSet([], False, False, None, page_url)

    meta = RobotsDirectives(False, False)
    resolve_against = page_url
    seen_base = False
    for element in root.iter("meta", "base"):
        if element.tag == "meta":
            if (element.get("name") or "").strip().lower() == "robots":
                found = parse_robots_directives(element.get("content") or "")
                meta = RobotsDirectives(meta.noindex or found.noindex, meta.nofollow or found.nofollow)
        elif not seen_base and element.get("href") is not None:
            seen_base = True  # only the first <base href> counts, as in browsers
            resolve_against = _try_normalize(element.get("href"), page_url, policy, max_href_length) or page_url
    canonical = _canonical(root, resolve_against, policy, max_href_length)

    collector = _Collector(page_domain, max_links)
    for element in root.iter("a", "area"):
        href = element.get("href")
        if href is None:
            continue
        rel_nofollow = "nofollow" in (element.get("rel") or "").lower().split()
        nofollow = rel_nofollow or meta.nofollow
        if element.tag == "area":
            anchor = _collapse(element.get("alt") or "", max_anchor_length)
        else:
            anchor = _anchor_text(element, max_anchor_length)
        if not _add_link(collector, href, anchor, nofollow, resolve_against, policy, max_href_length):
            break

    links = [ExtractedLink(e.url, e.anchor, e.link_class, e.bad_reason, e.nofollow) for e in collector.entries.values()]
    if collector.truncated:
        logger.debug("link cap %d reached on %s", max_links, page_url)
    return PageLinkSet(links, meta.nofollow, meta.noindex, canonical, resolve_against, collector.truncated)


def _add_link(
    collector: _Collector,
    href: str,
    anchor: str,
    nofollow: bool,
    base: str,
    policy: UrlPolicy,
    max_href_length: int,
) -> bool:
    try:
        if len(href) > max_href_length:
            raise InvalidUrl("too_long", href[:200])
        url = normalize_url(href, base, policy)
    except InvalidUrl as exc:
        raw = href.strip()[: policy.max_length]
        reason = exc.reason

        def make_bad() -> _Entry:
            return _Entry(raw, anchor, "bad", reason, nofollow)

        return collector.add("bad:" + raw, make_bad, anchor, nofollow)

    def make_good() -> _Entry:
        same = _domain_of(url) == collector.page_domain
        return _Entry(url, anchor, "internal" if same else "external", "", nofollow)

    return collector.add(url, make_good, anchor, nofollow)


def _try_normalize(href: str, base: str, policy: UrlPolicy, max_href_length: int) -> str | None:
    if len(href) > max_href_length:
        return None
    try:
        return normalize_url(href, base, policy)
    except InvalidUrl:
        return None


def _canonical(root: Any, base: str, policy: UrlPolicy, max_href_length: int) -> str | None:
    for element in root.iter("link"):
        if "canonical" in (element.get("rel") or "").lower().split():
            return _try_normalize(element.get("href") or "", base, policy, max_href_length)
    return None


def _domain_of(url: str) -> str:
    """Registered domain of a normalised URL's host ("" when there is none)."""
    if "://" not in url:
        return ""
    authority = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    hostport = authority.rpartition("@")[2]
    host = hostport[: hostport.index("]") + 1] if hostport.startswith("[") else hostport.partition(":")[0]
    return registered_domain(host) if host else ""
