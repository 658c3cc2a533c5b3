"""The rows the link base writes, built from consumed messages (pure: no I/O).

Every URL is normalised once and identified by its fingerprint. A link whose URL cannot
be crawled becomes a bad link carrying the normaliser's reason. A message that cannot be
recorded at all (no URL, or a page URL that is not crawlable) raises
:class:`~libs.common.errors.PoisonMessage`, which sends it to the dead-letter topic.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import mmh3

from libs.common.errors import PoisonMessage
from libs.common.followed_links import MAX_COUNTED_OCCURRENCES
from libs.common.url_keys import UrlKind, normalized_fingerprint, normalized_host, url_kind
from libs.common.urls import InvalidUrl, host_if_normal, normalize_url
from libs.common.wire import messages as pb

ANCHOR_LIMIT = 500
CONTEXT_LIMIT = 1000
HREF_LIMIT = 2048
TEXT_LIMIT = 2000

# A 304 (not modified) is a fetch that succeeded: the page is as at its last capture.
_SUCCEEDED = frozenset({pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE, pb.FETCH_STATUS_NOT_MODIFIED})
_HOST_UP = frozenset({pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE, pb.FETCH_STATUS_REDIRECT,
                      pb.FETCH_STATUS_NOT_MODIFIED})
_HOST_DOWN = frozenset({pb.FETCH_STATUS_HTTP_ERROR, pb.FETCH_STATUS_NETWORK_ERROR})


def clean_text(text: str, limit: int) -> str:
    """``text`` without NUL characters (PostgreSQL text cannot hold them), cut to ``limit`` characters."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text if len(text) <= limit else text[:limit]


@functools.lru_cache(maxsize=65_536)
def host_id(host: str) -> int:
    """Signed 64-bit fingerprint of a normalised host name (hashed as a URL is): the primary key of ``hosts``."""
    return normalized_fingerprint(host)


def text_hash(text: str) -> int:
    """Signed 64-bit hash of an arbitrary string (the key of a bad link's href)."""
    value: int = mmh3.hash64(text.encode("utf-8", "surrogatepass"), 0, True, True)[0]
    return value


class UrlRef(NamedTuple):
    """A normalised URL with its fingerprint and host.

    UrlRef, LinkRow and TargetRow are named tuples rather than frozen dataclasses: the link
    base builds one of each per link, and a tuple is built in half the time.
    """

    fp: int
    url: str
    host: str
    host_id: int
    key: tuple[int, int]
    """The primary key of the URL's row: (host id, URL fingerprint); kept, since every sort and lookup takes it."""

    @property
    def is_home_page(self) -> bool:
        return url_kind(self.url) == UrlKind.HOME


@functools.lru_cache(maxsize=200_000)
def resolve(url: str) -> UrlRef:
    """Normalises ``url`` (raising InvalidUrl); cached, since navigation links repeat on every page.

    The URL is normalised once (not at all when it is visibly in normal form already), and its
    fingerprint and host are read off the normal form.
    """
    host = host_if_normal(url)
    if host is None:
        normalized = normalize_url(url)
        host = normalized_host(normalized)
    else:
        normalized = url
    fp = normalized_fingerprint(normalized)
    hid = host_id(host)
    return UrlRef(fp, normalized, host, hid, (hid, fp))


def resolve_required(url: str, what: str) -> UrlRef:
    """The URL a message is about; PoisonMessage when it is missing or not crawlable."""
    if not url.strip():
        raise PoisonMessage(f"{what} without a url")
    try:
        return resolve(url)
    except InvalidUrl as exc:
        raise PoisonMessage(f"{what} url {url[:200]!r} is not crawlable: {exc.reason}") from exc


@dataclass(frozen=True, slots=True)
class HostRow:
    host_id: int
    host: str
    registered_domain: str


@dataclass(frozen=True, slots=True)
class PageRow:
    ref: UrlRef
    depth: int
    fetched_at_ms: int


class LinkRow(NamedTuple):
    source: UrlRef
    target: UrlRef
    anchor: str
    link_class: int
    nofollow: bool
    followable: bool
    context: str = ""
    occurrences: int = 1  # times the page carries the link

    @property
    def source_fp(self) -> int:
        return self.source.fp


@dataclass(frozen=True, slots=True)
class BadLinkRow:
    source_host_id: int
    source_fp: int
    href_hash: int
    href: str
    reason: str
    anchor: str


class TargetRow(NamedTuple):
    ref: UrlRef
    depth: int | None
    discovered_from: UrlRef
    followable: bool
    occurrences: int = 1  # times ``discovered_from`` links it


@dataclass(frozen=True, slots=True)
class DocumentRow:
    ref: UrlRef
    title: str
    content_fp: str
    published_at_ms: int
    language: str
    canonical_url: str | None
    fetched_at_ms: int


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """dup_state: 0 unique, 1 exact copy of ``duplicate_of``, 2 near-duplicate of ``duplicate_of``."""

    ref: UrlRef
    dup_state: int
    duplicate_of: str | None
    similarity: float | None

    @property
    def duplicate(self) -> bool:
        return self.dup_state != 0


@dataclass(frozen=True, slots=True)
class OutcomeRow:
    ref: UrlRef
    request_id: str
    attempt: int
    status: int
    http_status: int
    fetched_at_ms: int
    elapsed_ms: int
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status in _SUCCEEDED

    @property
    def host_available(self) -> bool | None:
        """What this outcome says about its host: only a fetch of the home page ``/`` decides."""
        if not self.ref.is_home_page:
            return None
        if self.status in _HOST_UP:
            return True
        if self.status in _HOST_DOWN:
            return False
        return None


def merge_links(old: LinkRow, new: LinkRow) -> LinkRow:
    """Two links from one page to one target: keep the first anchor, follow if either may be followed."""
    return LinkRow(
        old.source,
        old.target,
        old.anchor or new.anchor,
        old.link_class,
        old.nofollow and new.nofollow,
        old.followable or new.followable,
        old.context or new.context,
        min(old.occurrences + new.occurrences, MAX_COUNTED_OCCURRENCES),
    )


def targets_of(links: list[LinkRow], page_depths: dict[int, int | None]) -> list[TargetRow]:
    """One row per linked URL: depth = 1 + the smallest depth of a page linking to it.

    ``page_depths`` are the stored depths of the source pages (after this batch's update);
    the page giving the smallest depth becomes ``discovered_from``. Sorted by primary key,
    so that concurrent writers lock rows in the same order.
    """
    best: dict[tuple[int, int], TargetRow] = {}
    find, depth_of = best.get, page_depths.get
    source: UrlRef | None = None
    depth: int | None = None
    for link in links:
        if link.source is not source:  # links come page by page: the source's depth is looked up once per page
            source = link.source
            source_depth = depth_of(source.fp)
            depth = None if source_depth is None else source_depth + 1
        target = link.target
        key = target.key
        seen = find(key)
        if seen is None:
            best[key] = TargetRow(target, depth, source, link.followable, link.occurrences)
        elif depth is not None and (seen.depth is None or depth < seen.depth):
            best[key] = TargetRow(target, depth, source, seen.followable or link.followable, link.occurrences)
        elif link.followable and not seen.followable:
            best[key] = TargetRow(seen.ref, seen.depth, seen.discovered_from, True, seen.occurrences)
    return [best[key] for key in sorted(best)]


def host_group(host: int, groups: int) -> int:
    """The host group (0 .. ``groups`` - 1) a host id belongs to: the rows keyed by it are written by that group."""
    return host % groups


def _closeness(target: TargetRow) -> tuple[bool, int, int, int]:
    """Order of the row :func:`targets_of` keeps for a URL: smallest depth, then first source in key order."""
    return (target.depth is None, target.depth or 0, target.discovered_from.host_id, target.discovered_from.fp)


def combine_targets(parts: Iterable[list[TargetRow]]) -> list[TargetRow]:
    """The targets of one batch's links from the :func:`targets_of` of its parts: what it gives for all the links.

    A URL linked from pages of several parts keeps the row of the part with the smallest depth
    (the first source in key order among equals), and is followable if any part's is.
    """
    nonempty = [part for part in parts if part]
    if len(nonempty) <= 1:
        return nonempty[0] if nonempty else []
    best: dict[tuple[int, int], TargetRow] = {}
    for part in nonempty:
        for target in part:
            key = target.ref.key
            seen = best.get(key)
            if seen is None:
                best[key] = target
                continue
            keep = seen if _closeness(seen) <= _closeness(target) else target
            followable = seen.followable or target.followable
            best[key] = keep if keep.followable == followable else TargetRow(
                keep.ref, keep.depth, keep.discovered_from, followable, keep.occurrences)
    return [best[key] for key in sorted(best)]
