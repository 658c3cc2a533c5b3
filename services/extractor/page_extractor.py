"""One fetched page in, one document and one set of page links out (pure, no Kafka)."""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass

from libs.common.errors import PoisonMessage
from libs.common.urls import InvalidUrl, normalize_url, url_host
from libs.common.wire import messages as pb
from services.extractor.charset import decode_html
from services.extractor.content import content_fingerprint, extract_content
from services.extractor.links import extract_links, parse_x_robots_tag

log = logging.getLogger(__name__)

LINK_CLASS = {"internal": pb.LINK_CLASS_INTERNAL, "external": pb.LINK_CLASS_EXTERNAL, "bad": pb.LINK_CLASS_BAD}
HTML_TYPES = ("text/html", "application/xhtml+xml", "")


@dataclass(frozen=True)
class Extracted:
    document: pb.Document
    links: pb.PageLinks


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


def extract_page(result: pb.FetchResult, *, robots_token: str, max_html_bytes: int, max_links: int) -> Extracted:
    try:
        page_url = normalize_url(result.url)
        base = normalize_url(result.final_url or result.url)
    except InvalidUrl as exc:
        raise PoisonMessage(f"fetch result for invalid URL {result.url[:200]!r}: {exc.reason}") from exc
    body = decode_body(result, max_html_bytes)
    content_type = next((h.value for h in result.headers if h.name.lower() == "content-type"), result.content_type)
    html, _encoding = decode_html(body, content_type or None)
    header_noindex, header_nofollow = parse_x_robots_tag(result.x_robots_tag, agent=robots_token)
    link_set = extract_links(html, base, max_links=max_links)
    content = extract_content(html, base)
    fingerprint = content_fingerprint(content.text) if content.text else ""
    document = pb.Document(
        url=page_url,
        host=url_host(page_url),
        title=content.title,
        text=content.text,
        language=content.language,
        published_at_ms=content.published_at_ms,
        content_fingerprint=fingerprint,
        fetched_at_ms=result.fetched_at_ms,
        noindex=link_set.meta_noindex or header_noindex,
        canonical_url=link_set.canonical_url or "",
        author=content.author,
        extraction_error=content.error,
    )
    links = pb.PageLinks(
        url=page_url,
        host=url_host(page_url),
        fetched_at_ms=result.fetched_at_ms,
        depth=result.depth,
        nofollow=link_set.meta_nofollow or header_nofollow,
        links=[
            pb.Link(
                url=link.url,
                anchor=link.anchor,
                link_class=LINK_CLASS[link.link_class],
                bad_reason=link.bad_reason,
                nofollow=link.nofollow,
            )
            for link in link_set.links
        ],
    )
    return Extracted(document, links)
