"""One fetched page in, one document and one set of page links out (pure, no Kafka).

The body is inflated, decoded (declared charset, else a detected one) and
parsed once; links are read from the tree, checked against the spider-trap
rules, and the same tree goes to trafilatura for the text and metadata. A batch
(:func:`extract_pages`) goes through these steps phase by phase.

The page's URL and the URL its redirects ended at are normalised with the one
normaliser (:func:`libs.common.urls.normalize_url`); links resolve against the
final URL (or ``<base href>``), and are classed by the final URL's site.
"""

from __future__ import annotations

import dataclasses
import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from libs.common.errors import PoisonMessage
from libs.common.followed_links import fill_followed
from libs.common.settings import load_settings
from libs.common.url_keys import normalized_host
from libs.common.urls import DEFAULT_POLICY, InvalidUrl, UrlPolicy, UrlSettings, normalize_url
from libs.common.wire import messages as pb
from services.extractor.charset import decode_html, looks_binary
from services.extractor.content import PageContent, content_fingerprint, content_from_tree
from services.extractor.heap import release_free_memory
from services.extractor.html_tree import parse_html
from services.extractor.link_header import parse_link_header
from services.extractor.links import ExtractedLink, LinkOptions, PageLinkSet, extract_links_from_tree
from services.extractor.robots_meta import parse_x_robots_tag
from services.extractor.settings import ExtractorSettings
from services.extractor.traps import TrapRules

log = logging.getLogger(__name__)

LINK_CLASS = {"internal": pb.LINK_CLASS_INTERNAL, "external": pb.LINK_CLASS_EXTERNAL, "bad": pb.LINK_CLASS_BAD}
HTML_TYPES = ("text/html", "application/xhtml+xml", "")
MAX_HTML_BYTES: int = ExtractorSettings.max_html_bytes
PHASE_BYTES: int = ExtractorSettings.phase_bytes
MAX_CONTENT_ELEMENTS: int = ExtractorSettings.max_content_elements
TRIM_ABOVE_BYTES: int = ExtractorSettings.trim_above_bytes
TAG_WEIGHT = 32


@dataclass(frozen=True)
class Extracted:
    document: pb.Document
    links: pb.PageLinks


@dataclass(frozen=True)
class ExtractionOptions:
    """Everything :func:`extract_page` needs besides the page, built once per service."""

    links: LinkOptions = field(default_factory=LinkOptions)
    traps: TrapRules = field(default_factory=TrapRules)
    max_html_bytes: int = MAX_HTML_BYTES
    fast_content: bool = True
    phase_bytes: int = PHASE_BYTES
    max_content_elements: int = MAX_CONTENT_ELEMENTS
    trim_above_bytes: int = TRIM_ABOVE_BYTES

    @property
    def policy(self) -> UrlPolicy:
        return self.links.policy

    @classmethod
    def from_settings(cls, settings: ExtractorSettings, policy: UrlPolicy = DEFAULT_POLICY) -> ExtractionOptions:
        return cls(
            links=LinkOptions(
                policy=policy,
                max_links=settings.max_links,
                context_chars=settings.link_context_chars,
                robots_agent=settings.robots_token,
            ),
            traps=settings.trap_limits(),
            max_html_bytes=settings.max_html_bytes,
            fast_content=settings.fast_content,
            phase_bytes=settings.phase_bytes,
            max_content_elements=settings.max_content_elements,
            trim_above_bytes=settings.trim_above_bytes,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ExtractionOptions:
        """The options the service's settings in ``env`` give (the URL policy included)."""
        return cls.from_settings(load_settings(ExtractorSettings, env), load_settings(UrlSettings, env).policy())


DEFAULT_OPTIONS = ExtractionOptions()


def decode_body(result: pb.FetchResult, max_bytes: int) -> bytes:
    if result.body_codec in ("", "identity"):
        return bytes(result.body[:max_bytes])
    if result.body_codec == "zlib":
        inflater = zlib.decompressobj()
        try:
            return inflater.decompress(result.body, max_bytes)  # bounded, whatever the ratio
        except zlib.error as exc:
            raise PoisonMessage(f"corrupt zlib body: {exc}") from exc
    raise PoisonMessage(f"unknown body codec {result.body_codec!r}")


def should_extract(result: pb.FetchResult) -> bool:
    if result.status not in (pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE):
        return False
    media = result.content_type.split(";", 1)[0].strip().lower()
    return media in HTML_TYPES


def _headers(result: pb.FetchResult, name: str) -> list[str]:
    return [h.value for h in result.headers if h.name.lower() == name]


def _apply_traps(links: list[ExtractedLink], rules: TrapRules, year: int, link_depth: int) -> None:
    """Turn every link a trap rule catches into a bad link named after the rule."""
    for link in links:
        if link.link_class == "bad":
            continue
        rule = rules.check(link.url, year=year, link_depth=link_depth)
        if rule:
            link.link_class, link.bad_reason, link.trap_rule = "bad", f"trap:{rule}", rule


def _link_message(link: ExtractedLink) -> pb.Link:
    message = pb.Link(
        url=link.url,
        anchor=link.anchor,
        link_class=LINK_CLASS[link.link_class],
        context=link.context,
        source_tag=link.source_tag,
    )
    if link.link_class == "bad":  # the rarer fields, set only when they carry something
        message.bad_reason = link.bad_reason
        message.trap_rule = link.trap_rule
    if link.nofollow:
        message.nofollow = True
    if link.occurrences > 1:
        message.occurrences = link.occurrences
    return message


@dataclass
class _Page:
    """One fetch result on its way through the phases."""

    result: pb.FetchResult
    page_url: str
    final_url: str
    charset: str
    root: Any  # the parsed tree (None when there was nothing to parse)
    binary: bool = False  # served as HTML, but binary data: no text, no links
    links: pb.PageLinks | None = None  # the message, built once the links are read
    noindex: bool = False  # meta robots or X-Robots-Tag, read with the links
    content: PageContent | None = None
    weight: int = 0  # what the page counts for in a phase's phase_bytes (see _weight)


def _prepare(result: pb.FetchResult, options: ExtractionOptions) -> _Page:
    """Normalise the URLs, inflate, decode and parse. PoisonMessage when the result is unusable."""
    policy = options.policy
    try:
        page_url = normalize_url(result.url, policy=policy)
    except InvalidUrl as exc:
        raise PoisonMessage(f"fetch result for invalid URL {result.url[:200]!r}: {exc.reason}") from exc
    final_url = page_url
    if result.final_url and result.final_url != result.url:
        try:
            final_url = normalize_url(result.final_url, page_url, policy)
        except InvalidUrl as exc:
            log.warning("redirect target %r of %s is not crawlable (%s)", result.final_url[:200], page_url, exc.reason)
    body = decode_body(result, options.max_html_bytes)
    if looks_binary(body):
        return _Page(result, page_url, final_url, "", None, binary=True, weight=len(body))
    content_type = next(iter(_headers(result, "content-type")), result.content_type)
    html, charset = decode_html(body, content_type or None)
    return _Page(result, page_url, final_url, charset, parse_html(html), weight=_weight(body))


def _weight(body: bytes) -> int:
    """Bytes of HTML a page counts for in a phase: its size, or TAG_WEIGHT per tag if that is more.

    A tree costs about 400 bytes per element: ordinary pages (a tag every 50 bytes or so) weigh
    their size, pages dense in elements (20,000 links in 2 MiB) weigh up to three times more,
    so that a phase of them holds no more tree than a phase of ordinary pages.
    """
    return max(len(body), TAG_WEIGHT * body.count(b"<"))


def _read_links(page: _Page, options: ExtractionOptions) -> None:
    result = page.result
    header_links = parse_link_header(_headers(result, "link"))
    link_set = extract_links_from_tree(page.root, page.final_url, options.links, header_links)
    fetched = datetime.fromtimestamp(result.fetched_at_ms / 1000, UTC) if result.fetched_at_ms > 0 else None
    _apply_traps(link_set.links, options.traps, (fetched or datetime.now(UTC)).year, result.depth + 1)
    header_robots = parse_x_robots_tag(result.x_robots_tag, agent=options.links.robots_agent)
    page.noindex = link_set.meta_noindex or header_robots.noindex
    page.links = _links_message(page, link_set, header_robots.nofollow)


def _links_message(page: _Page, link_set: PageLinkSet, header_nofollow: bool) -> pb.PageLinks:
    result = page.result
    page_links = pb.PageLinks(
        url=page.page_url,
        host=normalized_host(page.page_url),
        fetched_at_ms=result.fetched_at_ms,
        depth=result.depth,
        nofollow=link_set.meta_nofollow or header_nofollow,
        links=[_link_message(link) for link in link_set.links],
        canonical_url=link_set.canonical_url or "",
        final_url=page.final_url if page.final_url != page.page_url else "",
        links_truncated=link_set.truncated,
    )
    fill_followed(page_links)
    return page_links


def _read_content(page: _Page, options: ExtractionOptions) -> None:
    result = page.result
    if page.binary:
        page.content = PageContent("", "", "", "", 0, "not_html:binary_body", result.truncated)
        return
    page.content = content_from_tree(
        page.root,
        page.final_url,
        fast=options.fast_content,
        truncated=result.truncated,
        fetched_at_ms=result.fetched_at_ms,
        language_header=next(iter(_headers(result, "content-language")), ""),
        max_elements=options.max_content_elements,
    )
    page.root = None  # the tree is not needed any more: free it before the next phase


def _assemble(page: _Page) -> Extracted:
    result, links, content = page.result, page.links, page.content
    assert links is not None and content is not None  # set by the phases before
    document = pb.Document(
        url=page.page_url,
        host=links.host,
        title=content.title,
        text=content.text,
        language=content.language,
        published_at_ms=content.published_at_ms,
        content_fingerprint=content_fingerprint(content.text) if content.text else "",
        fetched_at_ms=result.fetched_at_ms,
        noindex=page.noindex,
        canonical_url=links.canonical_url,
        author=content.author,
        extraction_error=content.error,
        charset=page.charset,
    )
    return Extracted(document, links)


def extract_pages(
    results: Sequence[pb.FetchResult], options: ExtractionOptions = DEFAULT_OPTIONS
) -> list[Extracted | PoisonMessage]:
    """Extract a batch of fetched pages: one :class:`Extracted`, or the PoisonMessage, per result.

    The batch goes through the work in phases (parse every page, then read every
    page's links, then run trafilatura on every page, then build the messages)
    rather than page by page: each phase's code and data stay in the CPU caches,
    which measured about 10% faster on one core (``docs/benchmarks.md``). A phase
    holds at most ``options.phase_bytes`` of HTML at a time (pages dense in elements
    count for more, :func:`_weight`), so big pages cannot pile up trees in memory.
    """
    out: list[Extracted | PoisonMessage | None] = [None] * len(results)
    start = 0
    while start < len(results):
        phase = read_phase_links(results, start, options)
        for index, exc in phase.poison:
            out[index] = exc
        for index, extracted in finish_phase(phase, options):
            out[index] = extracted
        start = phase.end
    return [item for item in out if item is not None]


@dataclass
class LinkPhase:
    """One phase of a batch, parsed and its links read; the text is still to be extracted.

    Indices are positions in the batch. The trees stay held until :func:`finish_phase`.
    """

    pages: list[tuple[int, _Page]]
    poison: list[tuple[int, PoisonMessage]]
    end: int
    """Position of the first result after this phase."""

    @property
    def links(self) -> list[tuple[int, pb.PageLinks]]:
        """Each parsed page's links message, ready to send before the text is extracted."""
        return [(index, page.links) for index, page in self.pages if page.links is not None]


def read_phase_links(results: Sequence[pb.FetchResult], start: int,
                     options: ExtractionOptions = DEFAULT_OPTIONS) -> LinkPhase:
    """Parses results from ``start`` until ``options.phase_bytes`` of HTML and reads their links.

    Parsing and reading links cost about a quarter of what the text costs (trafilatura), so a
    caller can hand a phase's links on before its text is done: the crawl learns new URLs a batch's
    extraction time sooner.
    """
    pages: list[tuple[int, _Page]] = []
    poison: list[tuple[int, PoisonMessage]] = []
    size = 0
    end = start
    while end < len(results) and (not pages or size < options.phase_bytes):
        try:
            page = _prepare(results[end], options)
            pages.append((end, page))
            size += page.weight
        except PoisonMessage as exc:
            poison.append((end, exc))
        end += 1
    for _, page in pages:
        _read_links(page, options)
    return LinkPhase(pages, poison, end)


def finish_phase(phase: LinkPhase, options: ExtractionOptions = DEFAULT_OPTIONS) -> list[tuple[int, Extracted]]:
    """Extracts the text of a phase's pages (freeing their trees, memory given back) and builds their messages."""
    for _, page in phase.pages:
        _read_content(page, options)
    release_free_memory(options.trim_above_bytes)
    return [(index, _assemble(page)) for index, page in phase.pages]


def extract_page(
    result: pb.FetchResult,
    options: ExtractionOptions = DEFAULT_OPTIONS,
    *,
    robots_token: str | None = None,
    max_html_bytes: int | None = None,
    max_links: int | None = None,
) -> Extracted:
    """Extract one fetched page; the keyword arguments override the matching ``options``.

    Raises PoisonMessage when the result cannot be extracted at all.
    """
    if robots_token is not None or max_links is not None:
        link_options = dataclasses.replace(
            options.links,
            robots_agent=options.links.robots_agent if robots_token is None else robots_token,
            max_links=options.links.max_links if max_links is None else max_links,
        )
        options = dataclasses.replace(options, links=link_options)
    if max_html_bytes is not None:
        options = dataclasses.replace(options, max_html_bytes=max_html_bytes)
    page = _prepare(result, options)
    _read_links(page, options)
    _read_content(page, options)
    return _assemble(page)
