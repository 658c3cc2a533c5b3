"""One consumed batch, turned into de-duplicated rows ready for one database transaction.

Messages are validated here, before any write, so that a poison message fails the batch
without touching the database. Within a batch, a later message about the same page wins
(page links and verdicts are keyed by URL, so their order is the crawl order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from libs.common.errors import PoisonMessage
from libs.common.followed_links import MAX_COUNTED_OCCURRENCES
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, PAGE_LINKS
from libs.common.urls import InvalidUrl, normalize_url, registered_domain
from libs.common.wire import messages as pb
from services.linkbase.rows import (
    ANCHOR_LIMIT,
    CONTEXT_LIMIT,
    HREF_LIMIT,
    TEXT_LIMIT,
    BadLinkRow,
    DocumentRow,
    HostRow,
    LinkRow,
    OutcomeRow,
    PageRow,
    UrlRef,
    VerdictRow,
    clean_text,
    host_group,
    merge_links,
    resolve,
    resolve_required,
    text_hash,
)

_FOLLOWABLE_CLASSES = (pb.LINK_CLASS_INTERNAL, pb.LINK_CLASS_EXTERNAL)


@dataclass
class _Page:
    row: PageRow
    links: dict[int, LinkRow]
    bad_links: dict[int, BadLinkRow]


@dataclass
class LinkbaseBatch:
    """Everything one batch writes, each kind de-duplicated by its primary key."""

    hosts: dict[int, HostRow] = field(default_factory=dict)
    pages: dict[int, _Page] = field(default_factory=dict)
    documents: dict[int, DocumentRow] = field(default_factory=dict)
    verdicts: dict[int, VerdictRow] = field(default_factory=dict)
    outcomes: dict[tuple[int, str], OutcomeRow] = field(default_factory=dict)

    # reading ---------------------------------------------------------------------------
    @property
    def page_rows(self) -> list[PageRow]:
        return [self.pages[fp].row for fp in sorted(self.pages)]

    @property
    def links(self) -> list[LinkRow]:
        """The links by primary key (source host, source, target): page by page, each page's by target."""
        rows: list[LinkRow] = []
        for _key, fp in sorted((page.row.ref.key, fp) for fp, page in self.pages.items()):
            by_target = self.pages[fp].links
            rows.extend([by_target[target] for target in sorted(by_target)])
        return rows

    @property
    def bad_links(self) -> list[BadLinkRow]:
        rows = [bad for page in self.pages.values() for bad in page.bad_links.values()]
        rows.sort(key=lambda r: (r.source_host_id, r.source_fp, r.href_hash))
        return rows

    def latest_outcomes(self) -> list[OutcomeRow]:
        """The most recent outcome of each URL (it sets the URL's last status)."""
        latest: dict[int, OutcomeRow] = {}
        for row in self.outcomes.values():
            seen = latest.get(row.ref.fp)
            if seen is None or row.fetched_at_ms >= seen.fetched_at_ms:
                latest[row.ref.fp] = row
        return [latest[fp] for fp in sorted(latest)]

    def host_availability(self) -> dict[int, tuple[bool, int]]:
        """Per host, what its most recent home-page outcome says, and when (hosts without one are absent)."""
        latest: dict[int, OutcomeRow] = {}
        for row in self.outcomes.values():
            if row.host_available is None:
                continue
            seen = latest.get(row.ref.host_id)
            if seen is None or row.fetched_at_ms >= seen.fetched_at_ms:
                latest[row.ref.host_id] = row
        return {hid: (bool(row.host_available), row.fetched_at_ms) for hid, row in sorted(latest.items())}

    @property
    def empty(self) -> bool:
        return not (self.hosts or self.pages or self.documents or self.verdicts or self.outcomes)

    def split(self, groups: int) -> list[LinkbaseBatch]:
        """The batch cut into ``groups`` host groups (:func:`~services.linkbase.rows.host_group`).

        Each row goes with the host its primary key starts with (a page and its links and bad
        links with the page's host), so the parts write disjoint rows. Link targets are not
        rows of the batch: the writer computes them and routes each to its own host's group.
        """
        parts = [LinkbaseBatch() for _ in range(groups)]
        for hid, host in self.hosts.items():
            parts[host_group(hid, groups)].hosts[hid] = host
        for fp, page in self.pages.items():
            parts[host_group(page.row.ref.host_id, groups)].pages[fp] = page
        for fp, document in self.documents.items():
            parts[host_group(document.ref.host_id, groups)].documents[fp] = document
        for fp, verdict in self.verdicts.items():
            parts[host_group(verdict.ref.host_id, groups)].verdicts[fp] = verdict
        for key, outcome in self.outcomes.items():
            parts[host_group(outcome.ref.host_id, groups)].outcomes[key] = outcome
        return parts

    # building --------------------------------------------------------------------------
    def _host(self, ref: UrlRef) -> int:
        hid = ref.host_id
        if hid not in self.hosts:
            self.hosts[hid] = HostRow(hid, ref.host, registered_domain(ref.host))
        return hid

    def add_page_links(self, msg: pb.PageLinks) -> None:
        page = resolve_required(msg.url, "page links")
        self._host(page)
        links: dict[int, LinkRow] = {}
        bad: dict[int, BadLinkRow] = {}
        site = registered_domain(page.host)
        page_nofollow = msg.nofollow
        hosts = self.hosts
        for link in msg.links:  # the hot loop of the link base (one pass per link): attributes read once
            anchor = link.anchor
            if "\x00" in anchor or len(anchor) > ANCHOR_LIMIT:
                anchor = clean_text(anchor, ANCHOR_LIMIT)
            url, link_class = link.url, link.link_class
            target: UrlRef | str
            if link.trap_rule or link_class == pb.LINK_CLASS_BAD or not url.strip():
                target = _reason(link)
            else:
                try:
                    target = resolve(url)
                except InvalidUrl as exc:
                    target = exc.reason
            if isinstance(target, str):
                href = clean_text(url, HREF_LIMIT)
                key = text_hash(href)
                bad.setdefault(key, BadLinkRow(page.host_id, page.fp, key, href, target, anchor))
                continue
            if target.host_id not in hosts:
                self._host(target)
            if link_class not in _FOLLOWABLE_CLASSES:
                same_site = registered_domain(target.host) == site
                link_class = pb.LINK_CLASS_INTERNAL if same_site else pb.LINK_CLASS_EXTERNAL
            nofollow = link.nofollow
            context = link.context
            row = LinkRow(page, target, anchor, link_class, nofollow, not (page_nofollow or nofollow),
                          clean_text(context, CONTEXT_LIMIT) if context else "",
                          min(max(1, link.occurrences), MAX_COUNTED_OCCURRENCES))
            seen = links.get(target.fp)
            links[target.fp] = row if seen is None else merge_links(seen, row)
        self.pages[page.fp] = _Page(PageRow(page, max(0, msg.depth), msg.fetched_at_ms), links, bad)

    def add_document(self, msg: pb.Document) -> None:
        ref = resolve_required(msg.url, "document")
        self._host(ref)
        canonical: str | None = None
        if msg.canonical_url.strip():
            try:
                canonical = normalize_url(msg.canonical_url, base=ref.url)
            except InvalidUrl:
                canonical = None
        row = DocumentRow(
            ref,
            clean_text(msg.title, TEXT_LIMIT),
            clean_text(msg.content_fingerprint, TEXT_LIMIT),
            msg.published_at_ms,
            clean_text(msg.language, 32),
            canonical,
            msg.fetched_at_ms,
        )
        seen = self.documents.get(ref.fp)
        if seen is None or row.fetched_at_ms >= seen.fetched_at_ms:
            self.documents[ref.fp] = row

    def add_verdict(self, msg: pb.DuplicateVerdict) -> None:
        ref = resolve_required(msg.url, "duplicate verdict")
        self._host(ref)
        duplicate_of = clean_text(msg.duplicate_of, HREF_LIMIT) if msg.duplicate and msg.duplicate_of else None
        if duplicate_of is None:
            self.verdicts[ref.fp] = VerdictRow(ref, 0, None, None)
            return
        near = msg.kind == pb.DUPLICATE_KIND_NEAR
        self.verdicts[ref.fp] = VerdictRow(ref, 2 if near else 1, duplicate_of, msg.similarity if near else 1.0)

    def add_outcome(self, msg: pb.FetchOutcome, timestamp_ms: int) -> None:
        ref = resolve_required(msg.url, "fetch outcome")
        self._host(ref)
        fetched_at_ms = msg.fetched_at_ms or timestamp_ms
        request_id = clean_text(msg.request_id, 200) or f"{fetched_at_ms}:{msg.attempt}"
        self.outcomes[(ref.fp, request_id)] = OutcomeRow(
            ref,
            request_id,
            msg.attempt,
            msg.status,
            msg.http_status,
            fetched_at_ms,
            msg.elapsed_ms,
            clean_text(msg.error, TEXT_LIMIT),
        )


def _reason(link: pb.Link) -> str:
    """Why a link that is a trap, marked bad or empty is a bad link (a spider trap's is "trap:<rule>")."""
    if link.trap_rule:
        return clean_text(f"trap:{link.trap_rule}", 200)
    if link.link_class == pb.LINK_CLASS_BAD:
        return clean_text(link.bad_reason, 200) or "unspecified"
    return "empty"


# One adder per input topic: each validates and adds one consumed message, raising PoisonMessage when it is bad.
def add_page_links(batch: LinkbaseBatch, record: Record[pb.PageLinks]) -> None:
    batch.add_page_links(record.value)


def add_document(batch: LinkbaseBatch, record: Record[pb.Document]) -> None:
    batch.add_document(record.value)


def add_verdict(batch: LinkbaseBatch, record: Record[pb.DuplicateVerdict]) -> None:
    batch.add_verdict(record.value)


def add_outcome(batch: LinkbaseBatch, record: Record[pb.FetchOutcome]) -> None:
    batch.add_outcome(record.value, record.timestamp_ms)


ADDERS: dict[str, Callable[[LinkbaseBatch, Record[Any]], None]] = {
    PAGE_LINKS.name: add_page_links,
    DOCUMENTS.name: add_document,
    DUPLICATE_VERDICTS.name: add_verdict,
    FETCH_OUTCOMES.name: add_outcome,
}
"""The adder of each input topic, by topic name."""


def add_record(batch: LinkbaseBatch, record: Record[Any]) -> None:
    """Adds a message of any input topic, by its topic's adder (for batches that mix topics, as tests build)."""
    add = ADDERS.get(record.topic.name)
    if add is None:
        raise PoisonMessage(f"linkbase does not handle topic {record.topic.name}")
    add(batch, record)


def build_batch(records: Iterable[Record[Any]]) -> LinkbaseBatch:
    """Validates and converts records of any input topic; raises PoisonMessage on the first bad message."""
    batch = LinkbaseBatch()
    for record in records:
        add_record(batch, record)
    return batch
