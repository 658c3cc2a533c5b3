"""Main text and metadata of an HTML page, and an exact-duplicate fingerprint.

The main text, title, author and publish date come from trafilatura's
``bare_extraction`` (about twice as fast as ``extract(output_format="json")``,
which serialises then parses the same result). Its date is htmldate's
original-publication date, asked for with its time of day and offset so that
JSON-LD and ``<time datetime>`` values keep their precision.

The page is parsed once (:mod:`services.extractor.html_tree`) and the tree is
handed to trafilatura, which would otherwise parse the string again.

When trafilatura finds no main content (or fails), the visible text of
``<body>`` without scripts, styles, navigation and footers is used instead and
``error`` says so (``fallback:<why>``): a page never comes back silently empty.

A page of more than ``max_elements`` elements skips trafilatura altogether
(``fallback:too_many_elements``, its visible text, no date search): trafilatura
copies and walks the tree many times, and on a page dense in elements (5 MB of
links: 175,000 of them) that cost 550 MiB and a minute of CPU, enough for a
hostile page to exhaust an extractor and, redelivered after the crash, do it again.
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

import lxml.etree
import mmh3
from htmldate import find_date
from trafilatura import bare_extraction

from services.extractor.html_tree import parse_html

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_HTML_CHARS",
    "PageContent",
    "content_fingerprint",
    "content_from_tree",
    "date_params",
    "extract_content",
    "page_language",
    "parse_date_ms",
]

MAX_HTML_CHARS = 5_000_000
MAX_ELEMENTS = 50_000
_FALLBACK_DROPPED_TAGS = ("script", "style", "nav", "footer", "noscript", "template", "head")
_DATE_FORMAT = "%Y-%m-%dT%H:%M:%S%z"
_DAY_MS = 86_400_000
_LANGUAGE_TAG_RE = re.compile(r"\s*([A-Za-z]{2,3})(?![A-Za-z])")
_SPACES_RE = re.compile(r"[^\S\n]+")
_BLANK_LINES_RE = re.compile(r"\s*\n\s*")


@dataclass(frozen=True)
class PageContent:
    """What the extractor keeps of a page.

    ``language`` is the primary subtag of the declared language ("en"), or ""
    when the page declares none; ``published_at_ms`` is epoch milliseconds
    UTC, 0 when unknown; ``error`` is "" for a clean extraction, otherwise a
    short code (``fallback:<why>``, ``empty_document``); ``truncated`` says
    the HTML was cut to the size limit before parsing.
    """

    title: str
    text: str
    language: str
    author: str
    published_at_ms: int
    error: str
    truncated: bool = False


def content_fingerprint(text: str) -> str:
    """Exact-duplicate fingerprint: MurmurHash3 x64 128 (32 hex digits) of the case- and space-folded text."""
    folded = " ".join(text.lower().split())
    value: int = mmh3.hash128(folded.encode("utf-8", "surrogatepass"), seed=0, x64arch=True, signed=False)
    return f"{value:032x}"


def parse_date_ms(value: str | None) -> int:
    """Epoch milliseconds (UTC) of an ISO 8601 date or date-time; a date alone is midnight UTC; 0 if unparsable."""
    if not value:
        return 0
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def _primary_subtag(value: str | None) -> str:
    match = _LANGUAGE_TAG_RE.match(value or "")
    return match.group(1).lower() if match else ""


def page_language(root: Any, header: str = "") -> str:
    """Primary subtag of the page's declared language: ``<html lang>``, then the
    ``Content-Language`` meta tag or header, then ``og:locale``; "" when none."""
    if root is None:
        return _primary_subtag(header)
    declared = _primary_subtag(root.get("lang") or root.get("xml:lang"))
    if declared:
        return declared
    locale = ""
    for element in root.iter("meta"):
        if (element.get("http-equiv") or "").strip().lower() == "content-language":
            declared = _primary_subtag(element.get("content"))
            if declared:
                return declared
        elif not locale and (element.get("property") or "").strip().lower() == "og:locale":
            locale = _primary_subtag(element.get("content"))
    return _primary_subtag(header) or locale


def date_params(fetched_at_ms: int = 0) -> dict[str, Any]:
    """htmldate's parameters, as trafilatura passes them, with the latest plausible date.

    A page cannot be published after it was fetched: the latest date is the end
    of the day after the fetch (UTC; the day after, for time zones ahead of
    UTC). Day-granular, so htmldate's validation caches stay warm from page to
    page. Without a fetch time, htmldate's default (the end of today) holds.
    """
    return _date_params_of_day(fetched_at_ms // _DAY_MS if fetched_at_ms > 0 else -1)


@functools.lru_cache(maxsize=4)
def _date_params_of_day(day: int) -> dict[str, Any]:
    """One shared dict per fetch day (trafilatura and htmldate copy it before changing it)."""
    params: dict[str, Any] = {"original_date": True, "extensive_search": True, "outputformat": _DATE_FORMAT}
    if day >= 0:
        fetched = datetime.fromtimestamp(day * 86400, UTC).date()
        params["max_date"] = datetime.combine(fetched + timedelta(days=1), time.max)
    return params


def extract_content(
    html: str,
    url: str,
    *,
    max_html_chars: int = MAX_HTML_CHARS,
    fast: bool = True,
    fetched_at_ms: int = 0,
) -> PageContent:
    """Extract main text and metadata from decoded HTML fetched from ``url`` (parses it first)."""
    truncated = len(html) > max_html_chars
    if truncated:
        logger.debug("html of %s cut from %d to %d characters", url, len(html), max_html_chars)
        html = html[:max_html_chars]
    root = parse_html(html)
    return content_from_tree(root, url, fast=fast, truncated=truncated, fetched_at_ms=fetched_at_ms)


def content_from_tree(
    root: Any,
    url: str,
    *,
    fast: bool = True,
    truncated: bool = False,
    fetched_at_ms: int = 0,
    language_header: str = "",
    max_elements: int = MAX_ELEMENTS,
) -> PageContent:
    """Main text and metadata of a parsed page (``root`` from :func:`parse_html`, or None).

    ``fast`` skips trafilatura's second-opinion extractors (readability,
    jusText), roughly 10-40% faster; the date search stays extensive because
    publish dates feed the freshness models. The tree is not changed
    (trafilatura copies it; the fallback works on a copy). Never raises.
    """
    if root is None:
        return PageContent("", "", _primary_subtag(language_header), "", 0, "empty_document", truncated)
    language = page_language(root, language_header)
    if next(itertools.islice(root.iter(), max_elements, None), None) is not None:
        return _visible_text(root, "too_many_elements", language, truncated)
    params = date_params(fetched_at_ms)
    try:
        document = bare_extraction(
            root,
            url=url,
            fast=fast,
            with_metadata=True,
            include_comments=False,
            date_extraction_params=params,
        )
    except Exception as exc:  # trafilatura is heuristic code over hostile input: never lose the page to it
        logger.warning("trafilatura failed on %s", url, exc_info=True)
        return _fallback(root, f"trafilatura_error:{type(exc).__name__}", language, truncated, params)
    if document is None:
        return _fallback(root, "no_main_content", language, truncated, params)
    text = _field(document, "text")
    if not text:
        return _fallback(root, "empty_main_text", language, truncated, params)
    return PageContent(
        title=_field(document, "title"),
        text=text,
        language=language,
        author=_field(document, "author"),
        published_at_ms=parse_date_ms(_field(document, "date")),
        error="",
        truncated=truncated,
    )


def _field(document: Any, name: str) -> str:
    """A string field of trafilatura's result (a ``Document``, or a dict in older versions)."""
    value = document.get(name) if isinstance(document, dict) else getattr(document, name, None)
    return value.strip() if isinstance(value, str) else ""


def _fallback(root: Any, why: str, language: str, truncated: bool, params: dict[str, Any]) -> PageContent:
    """Visible body text when trafilatura found nothing; ``error`` records why."""
    root = copy.deepcopy(root)  # the caller's tree stays as it was
    title = _first_text(root, ".//title") or _meta(root, "og:title") or _first_text(root, ".//h1")
    author = _meta(root, "author")
    try:
        # A tree (never a string: htmldate would take a URL-like string for an address to download).
        published_at_ms = parse_date_ms(find_date(root, **params))
    except Exception:  # date heuristics must not cost us the text
        logger.debug("htmldate failed", exc_info=True)
        published_at_ms = 0
    body = root.find("body")
    if body is None:
        body = root
    lxml.etree.strip_elements(body, *_FALLBACK_DROPPED_TAGS, with_tail=False)
    raw = _block_text(body)
    text = _BLANK_LINES_RE.sub("\n", _SPACES_RE.sub(" ", raw)).strip()
    error = f"fallback:{why}" if text else f"fallback:{why}:no_text"
    return PageContent(title, text, language, author, published_at_ms, error, truncated)


def _visible_text(root: Any, why: str, language: str, truncated: bool) -> PageContent:
    """The fallback without a copy of the tree or a date search, for trees too big for either."""
    title = _first_text(root, ".//title")
    body = root.find("body")
    raw = _block_text(root if body is None else body, skipped=frozenset(_FALLBACK_DROPPED_TAGS))
    text = _BLANK_LINES_RE.sub("\n", _SPACES_RE.sub(" ", raw)).strip()
    error = f"fallback:{why}" if text else f"fallback:{why}:no_text"
    return PageContent(title, text, language, _meta(root, "author"), 0, error, truncated)


_BLOCK_TAGS = frozenset(
    {"p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "section", "article"}
    | {"header", "main", "aside", "blockquote", "pre", "br", "dd", "dt", "form"}
)


def _block_text(body: Any, skipped: frozenset[str] = frozenset()) -> str:
    """Text of ``body`` in document order, with a line break at each block boundary; the
    elements named in ``skipped`` are left out (their tails are kept)."""
    parts: list[str] = []
    walker = lxml.etree.iterwalk(body, events=("start", "end", "comment", "pi"))
    for event, node in walker:
        if event in ("comment", "pi"):  # reported once: only their tail is text
            if node.tail:
                parts.append(node.tail)
            continue
        block = node.tag in _BLOCK_TAGS
        if event == "start":
            if node.tag in skipped and node is not body:
                walker.skip_subtree()  # its "end" event still comes, for its tail
                continue
            if block:
                parts.append("\n")
            if node.text:
                parts.append(node.text)
        else:
            if block:
                parts.append("\n")
            if node.tail and node is not body:
                parts.append(node.tail)
    return "".join(parts)


def _first_text(root: Any, path: str) -> str:
    element = root.find(path)
    if element is None:
        return ""
    return " ".join(element.text_content().split())


def _meta(root: Any, name: str) -> str:
    for element in root.iter("meta"):
        key = (element.get("name") or element.get("property") or "").strip().lower()
        if key == name:
            return " ".join((element.get("content") or "").split())
    return ""
