"""Writes of the link base: one transaction per written batch, bulk statements only.

Every URL row is addressed by its full primary key (host id, URL fingerprint), so each
statement's rows go to their host's partition and the "seen" test of a discovered URL is an
``ON CONFLICT`` probe of the primary key index, never a scan. Links, link targets and bad
links go in through COPY into staging tables (:mod:`services.linkbase.staging`), the rest as
columns expanded with ``unnest``: a batch of 500 pages with 25,000 links costs about fifteen
round trips. Rows are sorted by primary key, so concurrent writers lock in the same order.
Every write is idempotent: a redelivered batch finds its rows in place and changes nothing.

Link targets this process knows to be stored with a depth and state the link cannot improve
are not merged again (:mod:`services.linkbase.known_targets`), and the merge leaves out, without
locking them, those whose stored row the link cannot change. New link targets count
against their host's URL budget (:mod:`services.linkbase.host_budget`);
the ones over it are kept as bad links.

A re-fetched page's out-links are replaced. The links it has now and did not have at its
previous fetch are the children it revealed: they go into the publish-time history with the
previous and the current fetch time (seed 001; :mod:`services.linkbase.history`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.pool import Database
from services.linkbase import staging
from services.linkbase.annotations import write_documents, write_outcomes, write_verdicts
from services.linkbase.batch import LinkbaseBatch
from services.linkbase.history import RevealedChild, revealed_children, write_history
from services.linkbase.host_budget import HostBudget
from services.linkbase.known_targets import KnownTargets
from services.linkbase.rows import PageRow, TargetRow, UrlRef, targets_of
from services.linkbase.seen import ensure_urls
from services.linkbase.unchanged_versions import write_unchanged_versions

log = logging.getLogger(__name__)

Conn = AsyncConnection[Any]

_UPSERT_HOSTS = """
INSERT INTO linkbase.hosts (host_id, host, registered_domain)
SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING
"""

# Returns each page's depth and the fetch time of the out-links stored before this batch
# (the CTE reads the rows as they were: every part of one statement sees one snapshot).
# links_at is set whenever out-links are written (the transaction's time when the page's own is
# unknown), so an empty links_at means no out-link of the page is stored.
_UPDATE_PAGES = """
WITH v AS (
    SELECT x.host_id, x.url_fp, x.depth, to_timestamp(NULLIF(x.ms, 0) / 1000.0) AS fetched_at
    FROM unnest(%s::bigint[], %s::bigint[], %s::int[], %s::bigint[]) AS x(host_id, url_fp, depth, ms)
), before AS (
    SELECT u.host_id, u.url_fp, u.links_at FROM linkbase.urls AS u JOIN v USING (host_id, url_fp)
)
UPDATE linkbase.urls AS u
SET depth = LEAST(u.depth, v.depth), fetched_at = GREATEST(u.fetched_at, v.fetched_at),
    links_at = COALESCE(GREATEST(u.links_at, v.fetched_at), now())
FROM v JOIN before USING (host_id, url_fp)
WHERE u.host_id = v.host_id AND u.url_fp = v.url_fp
RETURNING u.url_fp, u.depth, (extract(epoch FROM before.links_at) * 1000)::bigint
"""

_EXISTING_LINKS = """
SELECT l.source_fp, l.target_fp FROM linkbase.links AS l
JOIN unnest(%s::bigint[], %s::bigint[]) AS p(host_id, url_fp)
  ON l.source_host_id = p.host_id AND l.source_fp = p.url_fp
"""
_DELETE_LINKS = """
DELETE FROM linkbase.links AS l USING unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS k(host_id, s, t)
WHERE l.source_host_id = k.host_id AND l.source_fp = k.s AND l.target_fp = k.t
"""
_EXISTING_BAD = """
SELECT b.source_fp, b.href_hash FROM linkbase.bad_links AS b
JOIN unnest(%s::bigint[], %s::bigint[]) AS p(host_id, url_fp)
  ON b.source_host_id = p.host_id AND b.source_fp = p.url_fp
"""
_DELETE_BAD = """
DELETE FROM linkbase.bad_links AS b USING unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS k(host_id, s, h)
WHERE b.source_host_id = k.host_id AND b.source_fp = k.s AND b.href_hash = k.h
"""

# A target becomes pending (1) when first seen followable; announced (2) stays announced.
# discovered_from follows the smallest depth. Targets whose stored row the link cannot change
# (stored depth at most the link's, state at least the link's) are left out before the upsert:
# ON CONFLICT DO UPDATE locks the row it finds even when its WHERE then skips the update, which
# costs a WAL record and a dirtied heap page per navigation link. Each is probed once by primary
# key (LATERAL ... LIMIT 1: never a scan, whatever the planner thinks of the staging table).
# Returns, per host, the URLs this transaction inserted (first_seen is the transaction's start):
# the per-host budget's count (services/linkbase/host_budget.py).
_MERGE_TARGETS = """
WITH merged AS (
INSERT INTO linkbase.urls AS u (host_id, url_fp, url, depth, discovered_from_host_id, discovered_from_fp,
                                announce_state, discovered_occurrences)
SELECT s.host_id, s.url_fp, s.url, s.depth, s.from_host_id, s.from_fp, s.announce_state, s.occurrences
FROM stage_targets AS s
LEFT JOIN LATERAL (SELECT o.depth, o.announce_state FROM linkbase.urls AS o
                   WHERE o.host_id = s.host_id AND o.url_fp = s.url_fp LIMIT 1) AS o ON true
WHERE o.announce_state IS NULL OR o.announce_state < s.announce_state
   OR (s.depth IS NOT NULL AND (o.depth IS NULL OR s.depth < o.depth))
ORDER BY s.host_id, s.url_fp
ON CONFLICT (host_id, url_fp) DO UPDATE SET
    depth = LEAST(u.depth, excluded.depth),
    discovered_from_host_id = CASE
        WHEN excluded.depth < u.depth OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
        THEN excluded.discovered_from_host_id ELSE u.discovered_from_host_id END,
    discovered_from_fp = CASE
        WHEN excluded.depth < u.depth OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
        THEN excluded.discovered_from_fp ELSE u.discovered_from_fp END,
    discovered_occurrences = CASE
        WHEN excluded.depth < u.depth OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
        THEN excluded.discovered_occurrences ELSE u.discovered_occurrences END,
    announce_state = GREATEST(u.announce_state, excluded.announce_state)
WHERE excluded.depth < u.depth
   OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
   OR excluded.announce_state > u.announce_state
RETURNING u.host_id, u.first_seen = now() AS new
)
SELECT host_id, count(*) FROM merged WHERE new GROUP BY host_id
"""

_MERGE_LINKS = """
INSERT INTO linkbase.links AS l (source_host_id, source_fp, target_fp, target_host_id, anchor, context, link_class,
                                 nofollow)
SELECT source_host_id, source_fp, target_fp, target_host_id, anchor, context, link_class, nofollow FROM stage_links
ON CONFLICT (source_host_id, source_fp, target_fp) DO UPDATE SET
    anchor = excluded.anchor, context = excluded.context, link_class = excluded.link_class,
    nofollow = excluded.nofollow
WHERE (l.anchor, l.context, l.link_class, l.nofollow)
      IS DISTINCT FROM (excluded.anchor, excluded.context, excluded.link_class, excluded.nofollow)
"""

_MERGE_BAD = """
INSERT INTO linkbase.bad_links AS b (source_host_id, source_fp, href_hash, href, reason, anchor)
SELECT source_host_id, source_fp, href_hash, href, reason, anchor FROM stage_bad_links
ON CONFLICT (source_host_id, source_fp, href_hash) DO UPDATE SET reason = excluded.reason, anchor = excluded.anchor
WHERE (b.reason, b.anchor) IS DISTINCT FROM (excluded.reason, excluded.anchor)
"""


@dataclass(frozen=True)
class Written:
    """What writing a batch's own rows leaves to do: the link targets to merge, the history it recorded."""

    targets: list[TargetRow]
    revealed: list[RevealedChild]


def fetched_refs(batch: LinkbaseBatch) -> list[UrlRef]:
    """The URLs a batch reports fetched: its pages, documents, verdicts (a verdict implies a fetch) and
    successful outcomes."""
    return [*(p.ref for p in batch.page_rows), *(d.ref for d in batch.documents.values()),
            *(v.ref for v in batch.verdicts.values()), *(r.ref for r in batch.outcomes.values() if r.succeeded)]


class LinkStore:
    """Applies :class:`LinkbaseBatch` es: in one transaction each, or with their targets merged later.

    :meth:`write` is the whole batch in one transaction. :meth:`write_deferred` is the step of
    a writer per host group (:mod:`services.linkbase.group_writer`): it merges targets an earlier
    batch left (those of its own hosts), then writes the batch's rows except its targets, which
    it returns, so that each URL row is only ever written by its own host group's transaction.
    """

    def __init__(self, db: Database, budget: HostBudget | None = None, known: KnownTargets | None = None) -> None:
        self._db = db
        self._budget = budget or HostBudget(0)
        self._known = known or KnownTargets()

    async def write(self, batch: LinkbaseBatch) -> list[RevealedChild]:
        """Writes the batch; returns the publish-time history rows it recorded."""
        async with self._db.transaction() as conn:
            written = await self._write_own_rows(conn, batch)
            merged = await self._merge_targets(conn, written.targets)
        self._known.remember(merged)  # committed: now a safe bound (known_targets.py)
        return written.revealed

    async def write_deferred(self, batch: LinkbaseBatch, earlier: list[TargetRow]) -> Written:
        """One transaction: merges ``earlier`` targets, then writes ``batch`` except its targets, returned."""
        async with self._db.transaction() as conn:
            merged = await self._merge_targets(conn, earlier)
            written = await self._write_own_rows(conn, batch)
        self._known.remember(merged)
        return written

    async def _write_own_rows(self, conn: Conn, batch: LinkbaseBatch) -> Written:
        await self._write_hosts(conn, batch)
        # Every URL the batch names gets its row first, in one statement for the fetched ones (their
        # pages, documents, verdicts and successful outcomes) and one for the others.
        first_time = await ensure_urls(conn, fetched_refs(batch), fetched=True)
        await ensure_urls(conn, [r.ref for r in batch.outcomes.values() if not r.succeeded], fetched=False)
        written = await self._write_page_links(conn, batch, first_time)
        await write_documents(conn, batch)
        await write_verdicts(conn, batch)
        await write_outcomes(conn, batch)
        await write_unchanged_versions(conn, batch)  # after the documents: a 304's version copies the last one
        return written

    async def _write_hosts(self, conn: Conn, batch: LinkbaseBatch) -> None:
        rows = [batch.hosts[hid] for hid in sorted(batch.hosts)]
        if rows:
            await conn.execute(
                _UPSERT_HOSTS,
                ([r.host_id for r in rows], [r.host for r in rows], [r.registered_domain for r in rows]),
            )

    async def _write_page_links(self, conn: Conn, batch: LinkbaseBatch, first_time: set[int]) -> Written:
        """``first_time``: the URLs this transaction recorded as fetched for the first time."""
        pages = sorted(batch.page_rows, key=lambda p: p.ref.key)
        if not pages:
            return Written([], [])
        cur = await conn.execute(
            _UPDATE_PAGES,
            ([p.ref.host_id for p in pages], [p.ref.fp for p in pages], [p.depth for p in pages],
             [p.fetched_at_ms for p in pages]),
        )
        updated = await cur.fetchall()
        depths: dict[int, int | None] = {fp: depth for fp, depth, _ in updated}
        links_at: dict[int, int | None] = {fp: previous for fp, _, previous in updated}
        all_links = batch.links
        budgeted = await self._budget.enforce(conn, all_links, batch.bad_links, targets_of(all_links, depths))
        links, bad = budgeted.links, budgeted.bad_links
        # A page with no stored out-links (fetched for the first time, or its links_at empty: see
        # _UPDATE_PAGES) has none to replace, and its links go straight in with COPY. Two writers of
        # one page at once (a partition changing hands mid-batch) both see it empty: the second's
        # COPY then fails on the primary key, and the batch's retry finds links_at set.
        unlinked = first_time | {fp for fp, _, previous in updated if previous is None}
        recrawled = [p for p in pages if p.ref.fp not in unlinked]
        before: dict[int, set[int]] = {}
        if recrawled:
            before = await self._replace_stale(conn, recrawled, {(r.source.fp, r.target.fp) for r in links},
                                               {(r.source_fp, r.href_hash) for r in bad})
        fresh = [r for r in links if r.source.fp in unlinked]
        known = [r for r in links if r.source.fp not in unlinked]
        for rows, into in ((fresh, "linkbase.links"), (known, None)):
            if not rows:
                continue
            await staging.copy_rows(conn, staging.LINKS, (
                (r.source.host_id, r.source.fp, r.target.fp, r.target.host_id, r.anchor, r.context, r.link_class,
                 r.nofollow) for r in rows), into=into)
            if into is None:
                await conn.execute(_MERGE_LINKS)
        if bad:
            await staging.copy_rows(conn, staging.BAD_LINKS, (
                (r.source_host_id, r.source_fp, r.href_hash, r.href, r.reason, r.anchor) for r in bad))
            await conn.execute(_MERGE_BAD)
        revealed = revealed_children(recrawled, links_at, before, links)
        await write_history(conn, revealed)
        return Written(budgeted.targets, revealed)

    async def _replace_stale(
        self, conn: Conn, pages: list[PageRow], links: set[tuple[int, int]], bad: set[tuple[int, int]]
    ) -> dict[int, set[int]]:
        """Deletes the out-links re-fetched pages no longer have; returns the targets each had before."""
        hosts, fps = [p.ref.host_id for p in pages], [p.ref.fp for p in pages]
        host_of = {p.ref.fp: p.ref.host_id for p in pages}
        before: dict[int, set[int]] = {}
        for existing_sql, delete_sql, keep in ((_EXISTING_LINKS, _DELETE_LINKS, links),
                                               (_EXISTING_BAD, _DELETE_BAD, bad)):
            cur = await conn.execute(existing_sql, (hosts, fps))
            rows = await cur.fetchall()
            if existing_sql is _EXISTING_LINKS:
                for source, target in rows:
                    before.setdefault(source, set()).add(target)
            gone = sorted(row for row in rows if row not in keep)
            if gone:
                await conn.execute(delete_sql, ([host_of[s] for s, _ in gone], [s for s, _ in gone],
                                                [t for _, t in gone]))
                log.debug("deleted %s out-links that re-fetched pages no longer have", len(gone))
        return before

    async def _merge_targets(self, conn: Conn, targets: list[TargetRow]) -> list[TargetRow]:
        """Inserts or updates the link targets not known to be unchanged, counts the new URLs per host;
        returns the targets merged (to remember once committed)."""
        merged = self._known.changing(targets)
        if not merged:
            return merged
        await staging.copy_rows(conn, staging.TARGETS, (
            (t.ref.host_id, t.ref.fp, t.ref.url, t.depth, t.discovered_from.host_id, t.discovered_from.fp,
             1 if t.followable else 0, t.occurrences) for t in merged))
        cur = await conn.execute(_MERGE_TARGETS)
        await self._budget.count(conn, [(host, n) for host, n in await cur.fetchall()])
        return merged
