"""Out-links of an HTML page: where they are found, how they resolve, which class they have.

Sources, each recorded in ``source_tag``: ``<a href>``, ``<area href>``,
``<frame src>`` and ``<iframe src>`` (followed like anchors: BeeBot follows
frames as part of the site, since a frameset page has no content of its own)
and the links of a frameset's ``<noframes>`` fallback,
``<link rel=canonical|next|prev|alternate>`` (``link:<rel>``; not alternate
stylesheets), ``<meta http-equiv=refresh>`` (``meta:refresh``) and, given by
the caller, the HTTP ``Link`` header (``header:<rel>``).

Every reference is resolved against the first ``<base href>`` of the document
(when present and valid, wherever it stands, as browsers do) or the page URL,
then normalised with :func:`libs.common.urls.normalize_url`. Each link is classed:

* ``internal``: same registered domain as the page (``blog.example.com``
  and ``www.example.com`` are internal to each other);
* ``external``: another registered domain;
* ``bad``: not crawlable (``javascript:``, ``mailto:``, malformed, too long);
  the raw reference is kept (capped) with the normaliser's reason code.

Links are deduplicated by normalised URL (bad links by raw reference). The
first occurrence fixes the position; the source tag is the most link-like one
seen (``a`` over ``area`` over frames over ``meta:refresh`` over ``link:*`` over
``header:*``), and anchor and context come from the most link-like occurrence
that has an anchor (the first of equals); a link is ``nofollow`` only if every
occurrence is. A link's
``nofollow`` includes the page's robots meta tag (reported on its own as well).
At most ``max_links`` distinct links are kept (``truncated`` says more existed).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from libs.common.url_keys import normalized_host
from libs.common.urls import DEFAULT_POLICY, InvalidUrl, UrlPolicy, normalize_url, registered_domain
from services.extractor.html_tree import parse_html
from services.extractor.link_text import LinkText
from services.extractor.robots_meta import NOTHING_FORBIDDEN, RobotsDirectives, parse_robots_directives

logger = logging.getLogger(__name__)

__all__ = [
    "CONTEXT_CHARS",
    "MAX_ANCHOR_LENGTH",
    "MAX_HREF_LENGTH",
    "MAX_LINKS",
    "ExtractedLink",
    "LinkClass",
    "LinkOptions",
    "PageLinkSet",
    "extract_links",
    "extract_links_from_tree",
    "refresh_target",
]

MAX_LINKS = 5000
MAX_HREF_LENGTH = 8192
MAX_ANCHOR_LENGTH = 256
CONTEXT_CHARS = 80

LinkClass = Literal["internal", "external", "bad"]

_LINK_RELS = ("canonical", "next", "prev", "alternate")
_REL_ALIASES = {"previous": "prev"}
_NOT_PAGES = frozenset({"stylesheet", "icon", "preload", "prefetch", "manifest", "modulepreload"})
# Lower is more link-like: the tag a deduplicated link keeps.
_TAG_RANK = {"a": 0, "area": 1, "frame": 2, "iframe": 2, "meta:refresh": 3}
# References whose resolution depends only on the base's scheme and authority (navigation
# links repeat on every page of a site, so their normal form is cached across pages).
_ORIGIN_ONLY_RE = re.compile(r"/(?![/\\])|[A-Za-z][A-Za-z0-9+.\-]*://[^/\\]")
_BASE_SENSITIVE_RE = re.compile(r"[\\\t\n\r]")
_ORIGIN_CACHE_SIZE = 32768
_REFRESH_URL_RE = re.compile(r"""^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$""", re.IGNORECASE | re.DOTALL)


def _rank(tag: str) -> int:
    return _TAG_RANK.get(tag, 4 if tag.startswith("link:") else 5)


@dataclass(slots=True)
class ExtractedLink:
    """One out-link; ``url`` is normalised, or the raw (capped) reference of a bad link.

    Mutable: occurrences of one URL merge into it while the page is read, and
    the trap rules turn it into a bad link afterwards.
    """

    url: str
    anchor: str
    link_class: LinkClass
    bad_reason: str
    nofollow: bool
    context: str = ""
    source_tag: str = "a"
    trap_rule: str = ""
    occurrences: int = 1
    """Times the page links this URL without nofollow (0: every occurrence is nofollow)."""


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


@dataclass(frozen=True)
class LinkOptions:
    """Limits and policy of link extraction (``context_chars`` per side; 0 turns context off)."""

    policy: UrlPolicy = DEFAULT_POLICY
    max_links: int = MAX_LINKS
    max_href_length: int = MAX_HREF_LENGTH
    max_anchor_length: int = MAX_ANCHOR_LENGTH
    context_chars: int = CONTEXT_CHARS
    robots_agent: str = "trawl"


# One link occurrence before resolution: (reference, source tag, <a> element or None, anchor, rel).
# The anchor and context of an <a> are read from its element, and only when they are needed.
_Reference = tuple[str, str, Any, str, str]
# A resolved reference: (dedup key, normalised URL or bad reason, registered domain or "" when bad).
_Resolved = tuple[str, str, str]


def _resolve_uncached(href: str, base: str, policy: UrlPolicy) -> _Resolved:
    try:
        url = normalize_url(href, base, policy)
    except InvalidUrl as exc:
        return ("bad:" + href.strip()[: policy.max_length], exc.reason, "")
    return (url, url, _domain_of(url))


@functools.lru_cache(maxsize=_ORIGIN_CACHE_SIZE)
def _resolve_on_origin(href: str, origin: str, policy: UrlPolicy) -> _Resolved:
    """A root-relative or absolute reference resolves the same against any URL of ``origin``."""
    return _resolve_uncached(href, origin, policy)


def _origin(url: str) -> str:
    """``scheme://authority/`` of a normalised URL."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('/', 1)[0]}/" if sep else url


class _Collector:
    """Resolves, classes, deduplicates and bounds link occurrences."""

    def __init__(self, base: str, page_domain: str, options: LinkOptions, texts: LinkText | None) -> None:
        self.base = base
        self.page_domain = page_domain
        self.options = options
        self.texts = texts
        self.entries: dict[str, ExtractedLink] = {}
        self.truncated = False
        self._origin = _origin(base)
        self._resolved: dict[str, _Resolved] = {}

    def rebase(self, base: str) -> None:
        """Resolve the next references against ``base``."""
        self.base = base
        self._origin = _origin(base)
        self._resolved.clear()

    def _resolve(self, href: str) -> _Resolved:
        """Cached per page, and across pages of one origin for the references whose
        resolution the base's path cannot change (navigation links repeat on every page)."""
        known = self._resolved.get(href)
        if known is None:
            if len(href) > self.options.max_href_length:
                known = ("bad:" + href.strip()[: self.options.policy.max_length], "too_long", "")
            elif _ORIGIN_ONLY_RE.match(href) and not _BASE_SENSITIVE_RE.search(href):
                known = _resolve_on_origin(href, self._origin, self.options.policy)
            else:
                known = _resolve_uncached(href, self.base, self.options.policy)
            self._resolved[href] = known
        return known

    def add(self, ref: _Reference, page_nofollow: bool) -> bool:
        """Record one occurrence. False when the list is full (and this link is new)."""
        href, tag, element, anchor, rel = ref
        key, value, domain = self._resolve(href)
        nofollow = page_nofollow or (bool(rel) and "nofollow" in rel.lower().split())
        entry = self.entries.get(key)
        if entry is not None:
            entry.nofollow = entry.nofollow and nofollow
            entry.occurrences += not nofollow
            better = _rank(tag) < _rank(entry.source_tag)
            if better:
                entry.source_tag = tag
            if (entry.anchor and not better) or (element is None and not anchor):
                return True
        elif len(self.entries) >= self.options.max_links:
            self.truncated = True
            return False
        context = ""
        if element is not None and self.texts is not None:
            anchor, context = self.texts.of(element)
        if entry is not None:  # no anchor yet, or a more link-like occurrence: its text wins
            if anchor:
                entry.anchor, entry.context = anchor, context
        elif domain:
            link_class: LinkClass = "internal" if domain == self.page_domain else "external"
            self.entries[key] = ExtractedLink(value, anchor, link_class, "", nofollow, context, tag,
                                              occurrences=int(not nofollow))
        else:
            self.entries[key] = ExtractedLink(key[4:], anchor, "bad", value, nofollow, context, tag,
                                              occurrences=int(not nofollow))
        return True


def _collapse(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _link_rel(rel: str) -> str | None:
    """The ``link:<rel>`` tag of a ``<link>`` worth following, None for resources (stylesheets, icons)."""
    tokens = [_REL_ALIASES.get(t, t) for t in rel.lower().split()]
    if any(t in _NOT_PAGES for t in tokens):
        return None
    for wanted in _LINK_RELS:
        if wanted in tokens:
            return wanted
    return None


def refresh_target(content: str) -> str | None:
    """The URL of a ``<meta http-equiv="refresh" content="5; url=...">``, None when it only reloads."""
    match = _REFRESH_URL_RE.match(content)
    if match is None:
        return None
    target = match.group(1).strip().strip("'\"").strip()
    return target or None


@dataclass
class _Scan:
    """What one walk over the tree finds: link occurrences and the page-level declarations."""

    references: list[_Reference] = field(default_factory=list)
    robots: RobotsDirectives = NOTHING_FORBIDDEN
    base_href: str | None = None  # the first <base href>
    canonical_href: str | None = None  # the first <link rel=canonical>


def _scan(root: Any, options: LinkOptions) -> _Scan:
    """Every link occurrence of the tree in document order, robots meta tags, base and canonical."""
    found = _Scan()
    references = found.references
    robots_names = ("robots", options.robots_agent.strip().lower())
    limit = options.max_anchor_length
    for element in root.iter("a", "area", "link", "frame", "iframe", "meta", "base", "noframes"):
        tag = element.tag
        if tag == "a":
            href = element.get("href")
            if href is not None:
                references.append((href, "a", element, "", element.get("rel") or ""))
        elif tag == "link":
            href = element.get("href")
            rel = element.get("rel") or ""
            which = _link_rel(rel) if href is not None else None
            if href is not None and which is not None:
                references.append((href, f"link:{which}", None, _collapse(element.get("title") or "", limit), rel))
                if which == "canonical" and found.canonical_href is None:
                    found.canonical_href = href
        elif tag == "meta":
            name = (element.get("name") or "").strip().lower()
            if name and name in robots_names:
                found.robots = found.robots | parse_robots_directives(element.get("content") or "")
            elif (element.get("http-equiv") or "").strip().lower() == "refresh":
                target = refresh_target(element.get("content") or "")
                if target is not None:
                    references.append((target, "meta:refresh", None, "", ""))
        elif tag == "area":
            href = element.get("href")
            if href is not None:
                references.append(
                    (href, "area", None, _collapse(element.get("alt") or "", limit), element.get("rel") or "")
                )
        elif tag == "base":
            if found.base_href is None:
                found.base_href = element.get("href")  # only the first <base href> counts, as in browsers
        elif tag == "noframes":  # raw text to the parser, as in browsers: its links are parsed apart
            text = element.text
            fallback = parse_html(text) if text and "<" in text else None
            if fallback is not None:
                references.extend(_scan(fallback, options).references)
        else:  # frame, iframe
            src = element.get("src")
            if src is not None:
                references.append((src, tag, None, _collapse(element.get("title") or "", limit), ""))
    return found


def extract_links_from_tree(
    root: Any,
    page_url: str,
    options: LinkOptions = LinkOptions(),
    header_links: Iterable[tuple[str, str]] = (),
) -> PageLinkSet:
    """The out-links of a parsed page fetched from ``page_url`` (normalised); see the module docstring.

    ``header_links`` are ``(url, rel)`` pairs of the response's HTTP ``Link``
    header, resolved against the page URL; a ``canonical`` there counts when
    the HTML declares none.
    """
    scan = _scan(root, options) if root is not None else _Scan()
    base = page_url
    if scan.base_href is not None:
        base = _try_normalize(scan.base_href, page_url, options) or page_url
    canonical = _try_normalize(scan.canonical_href, base, options) if scan.canonical_href is not None else None
    header = [(url, rel) for url, rel in header_links if _link_rel(rel)]
    for url, rel in header:
        if canonical is None and _link_rel(rel) == "canonical":
            canonical = _try_normalize(url, page_url, options)
    texts = LinkText(options.max_anchor_length, options.context_chars) if root is not None else None
    collector = _Collector(base, _domain_of(page_url), options, texts)
    nofollow = scan.robots.nofollow
    for ref in scan.references:
        if not collector.add(ref, nofollow):
            break
    if not collector.truncated:
        collector.rebase(page_url)  # header links are relative to the response URL, not <base>
        for url, rel in header:
            if not collector.add((url, f"header:{_link_rel(rel)}", None, "", rel), nofollow):
                break
    links = list(collector.entries.values())
    if collector.truncated:
        logger.debug("link cap %d reached on %s", options.max_links, page_url)
    return PageLinkSet(links, nofollow, scan.robots.noindex, canonical, base, collector.truncated)


def extract_links(
    html: str,
    base_url: str,
    policy: UrlPolicy = DEFAULT_POLICY,
    *,
    max_links: int = MAX_LINKS,
    max_href_length: int = MAX_HREF_LENGTH,
    max_anchor_length: int = MAX_ANCHOR_LENGTH,
    context_chars: int = CONTEXT_CHARS,
) -> PageLinkSet:
    """Parse ``html`` fetched from ``base_url`` and extract its out-links (see the module docstring)."""
    options = LinkOptions(policy, max_links, max_href_length, max_anchor_length, context_chars)
    try:
        page_url = normalize_url(base_url, policy=policy)
    except InvalidUrl:
        page_url = base_url
    return extract_links_from_tree(parse_html(html), page_url, options)


def _try_normalize(href: str, base: str, options: LinkOptions) -> str | None:
    if len(href) > options.max_href_length:
        return None
    try:
        return normalize_url(href, base, options.policy)
    except InvalidUrl:
        return None


def _domain_of(url: str) -> str:
    """Registered domain of a normalised URL's host ("" when there is none)."""
    host = normalized_host(url)
    return registered_domain(host) if host else ""
