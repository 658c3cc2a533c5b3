"""The per-host URL budget: the one spider-trap rule that needs state (seed 002: huge sites, traps).

The extractor's trap rules judge one URL at a time (``services/extractor/traps.py``). An
endless URL space that passes them (a faceted catalogue, a calendar inside its window, one
article under ever new ids) still piles URLs onto one host, and only the link base knows how
many a host has. A host may gain at most ``max_urls`` URLs: a link to a URL not yet known on
a host whose budget is spent is kept as a bad link with reason ``trap:host_budget`` (BeeBot's
bad-links table; never announced, so never fetched), not silently dropped. Within a batch the
shallowest new URLs go first. Links to URLs the host already has are never affected.

Counts live in ``linkbase.host_url_counts`` (migration 0004) and move in the writer's
transaction: every URL a batch inserts as a link target counts. They are read without a lock,
so concurrent writers may overshoot a budget by up to one batch each, which a budget can
afford; the counts themselves stay exact (increments are atomic upserts).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from services.linkbase.rows import BadLinkRow, LinkRow, TargetRow, text_hash

log = logging.getLogger(__name__)

TRAP_REASON = "trap:host_budget"

_COUNTS = "SELECT host_id, urls FROM linkbase.host_url_counts WHERE host_id = ANY(%s::bigint[])"
_KNOWN = """
SELECT u.host_id, u.url_fp FROM linkbase.urls AS u
JOIN unnest(%s::bigint[], %s::bigint[]) AS k(host_id, url_fp) ON u.host_id = k.host_id AND u.url_fp = k.url_fp
"""
_ADD = """
INSERT INTO linkbase.host_url_counts AS c (host_id, urls)
SELECT * FROM unnest(%s::bigint[], %s::bigint[])
ON CONFLICT (host_id) DO UPDATE SET urls = c.urls + excluded.urls
"""

Key = tuple[int, int]  # (host id, URL fingerprint): a URL row's primary key


@dataclass(frozen=True)
class Budgeted:
    """A batch's page links after the budget: over-budget targets moved to the bad links."""

    links: list[LinkRow]
    bad_links: list[BadLinkRow]
    targets: list[TargetRow]


def over_budget(candidates: Iterable[TargetRow], known: set[Key], counts: Mapping[int, int], max_urls: int) -> set[Key]:
    """The new targets that do not fit their host's budget: shallowest first, then by key."""
    new_by_host: dict[int, list[TargetRow]] = {}
    for target in candidates:
        if target.ref.key not in known:
            new_by_host.setdefault(target.ref.host_id, []).append(target)
    over: set[Key] = set()
    for host_id, new in new_by_host.items():
        room = max(0, max_urls - counts.get(host_id, 0))
        if len(new) <= room:
            continue
        new.sort(key=lambda t: (t.depth is None, t.depth or 0, t.ref.key))
        over.update(t.ref.key for t in new[room:])
    return over


class HostBudget:
    """Enforces and counts the per-host URL budget inside the link base writer's transaction."""

    def __init__(self, max_urls: int) -> None:
        self.max_urls = max_urls

    async def enforce(
        self, conn: AsyncConnection[Any], links: list[LinkRow], bad: list[BadLinkRow], targets: list[TargetRow]
    ) -> Budgeted:
        unchanged = Budgeted(links, bad, targets)
        if self.max_urls <= 0 or not targets:
            return unchanged
        per_host = Counter(t.ref.host_id for t in targets)
        cur = await conn.execute(_COUNTS, (sorted(per_host),))
        counts: dict[int, int] = {host: urls for host, urls in await cur.fetchall()}
        tight = {host for host, n in per_host.items() if counts.get(host, 0) + n > self.max_urls}
        if not tight:  # the common case: one cheap query per batch
            return unchanged
        candidates = [t for t in targets if t.ref.host_id in tight]
        cur = await conn.execute(_KNOWN, ([t.ref.host_id for t in candidates], [t.ref.fp for t in candidates]))
        known: set[Key] = {(host, fp) for host, fp in await cur.fetchall()}
        over = over_budget(candidates, known, counts, self.max_urls)
        if not over:
            return unchanged
        kept = [link for link in links if link.target.key not in over]
        trapped: dict[tuple[int, int], BadLinkRow] = {(b.source_fp, b.href_hash): b for b in bad}
        for link in links:
            if link.target.key in over:
                href_hash = text_hash(link.target.url)
                trapped.setdefault(
                    (link.source.fp, href_hash),
                    BadLinkRow(
                        link.source.host_id, link.source.fp, href_hash, link.target.url, TRAP_REASON, link.anchor
                    ),
                )
        log.info("%d new URLs over their host's budget of %d kept as bad links", len(over), self.max_urls)
        return Budgeted(
            kept,
            sorted(trapped.values(), key=lambda r: (r.source_fp, r.href_hash)),
            [t for t in targets if t.ref.key not in over],
        )

    async def count(self, conn: AsyncConnection[Any], new_per_host: Iterable[tuple[int, int]]) -> None:
        """Adds the URLs each host gained (``(host id, number)`` pairs) to its count."""
        rows = sorted((host, n) for host, n in new_per_host if n > 0)
        if rows:
            await conn.execute(_ADD, ([host for host, _ in rows], [n for _, n in rows]))
