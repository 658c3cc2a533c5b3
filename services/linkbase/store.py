"""Writes of the link base: one transaction per consumed batch, multi-row statements only.

Every statement takes whole columns as arrays and expands them with ``unnest``, so a
batch of 500 pages with 25,000 links costs about a dozen round trips. Rows are sorted
by primary key so that concurrent writers (several replicas) lock rows in the same
order. Every write is idempotent: a redelivered batch finds its rows already in place
and changes nothing (the ``WHERE`` clauses of the upserts skip no-op updates).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.pool import Database
from services.linkbase.batch import LinkbaseBatch
from services.linkbase.rows import TargetRow, UrlRef, targets_of

log = logging.getLogger(__name__)

_UPSERT_HOSTS = """
INSERT INTO linkbase.hosts (host_id, host, registered_domain)
SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING
"""

_MARK_FETCHED = """
UPDATE linkbase.urls AS u SET fetched = true, announce_state = 2
FROM unnest(%s::bigint[]) AS v(url_fp)
WHERE u.url_fp = v.url_fp AND NOT u.fetched
RETURNING u.url_fp, u.host_id
"""

_INSERT_SEEN = """
INSERT INTO linkbase.urls (url_fp, url, host_id, fetched, announce_state)
SELECT v.url_fp, v.url, v.host_id, %s, 2
FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) AS v(url_fp, url, host_id)
ON CONFLICT (url_fp) DO NOTHING
RETURNING url_fp, host_id
"""

_COUNT_PAGES = """
UPDATE linkbase.hosts AS h SET pages_fetched = h.pages_fetched + v.n
FROM unnest(%s::bigint[], %s::bigint[]) AS v(host_id, n)
WHERE h.host_id = v.host_id
"""

_UPDATE_PAGES = """
UPDATE linkbase.urls AS u
SET depth = LEAST(u.depth, v.depth), fetched_at = GREATEST(u.fetched_at, v.fetched_at)
FROM (SELECT x.url_fp, x.depth, to_timestamp(NULLIF(x.ms, 0) / 1000.0) AS fetched_at
      FROM unnest(%s::bigint[], %s::int[], %s::bigint[]) AS x(url_fp, depth, ms)) AS v
WHERE u.url_fp = v.url_fp
RETURNING u.url_fp, u.depth
"""

_EXISTING_LINKS = "SELECT source_fp, target_fp FROM linkbase.links WHERE source_fp = ANY(%s::bigint[])"
_DELETE_LINKS = """
DELETE FROM linkbase.links AS l USING unnest(%s::bigint[], %s::bigint[]) AS k(source_fp, target_fp)
WHERE l.source_fp = k.source_fp AND l.target_fp = k.target_fp
"""
_EXISTING_BAD = "SELECT source_fp, href_hash FROM linkbase.bad_links WHERE source_fp = ANY(%s::bigint[])"
_DELETE_BAD = """
DELETE FROM linkbase.bad_links AS b USING unnest(%s::bigint[], %s::bigint[]) AS k(source_fp, href_hash)
WHERE b.source_fp = k.source_fp AND b.href_hash = k.href_hash
"""

# A target becomes pending (1) when first seen followable; announced (2) stays announced.
# discovered_from follows the smallest depth. No-op updates are skipped.
_UPSERT_TARGETS = """
INSERT INTO linkbase.urls AS u (url_fp, url, host_id, depth, discovered_from_fp, announce_state)
SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::int[], %s::bigint[], %s::smallint[])
ON CONFLICT (url_fp) DO UPDATE SET
    depth = LEAST(u.depth, excluded.depth),
    discovered_from_fp = CASE
        WHEN excluded.depth < u.depth OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
        THEN excluded.discovered_from_fp ELSE u.discovered_from_fp END,
    announce_state = GREATEST(u.announce_state, excluded.announce_state)
WHERE excluded.depth < u.depth
   OR (u.depth IS NULL AND excluded.depth IS NOT NULL)
   OR excluded.announce_state > u.announce_state
"""

_UPSERT_LINKS = """
INSERT INTO linkbase.links AS l (source_fp, target_fp, anchor, link_class, nofollow)
SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::smallint[], %s::boolean[])
ON CONFLICT (source_fp, target_fp) DO UPDATE SET
    anchor = excluded.anchor, link_class = excluded.link_class, nofollow = excluded.nofollow
WHERE (l.anchor, l.link_class, l.nofollow) IS DISTINCT FROM (excluded.anchor, excluded.link_class, excluded.nofollow)
"""

_UPSERT_BAD = """
INSERT INTO linkbase.bad_links AS b (source_fp, href_hash, href, reason, anchor)
SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[])
ON CONFLICT (source_fp, href_hash) DO UPDATE SET reason = excluded.reason, anchor = excluded.anchor
WHERE (b.reason, b.anchor) IS DISTINCT FROM (excluded.reason, excluded.anchor)
"""

_UPDATE_DOCUMENTS = """
UPDATE linkbase.urls AS u
SET title = NULLIF(v.title, ''), content_fp = NULLIF(v.content_fp, ''),
    published_at = to_timestamp(NULLIF(v.published_ms, 0) / 1000.0),
    language = NULLIF(v.language, ''), canonical_url = v.canonical_url
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[], %s::text[], %s::text[])
     AS v(url_fp, title, content_fp, published_ms, language, canonical_url)
WHERE u.url_fp = v.url_fp
"""

_INSERT_VERSIONS = """
INSERT INTO linkbase.page_versions (url_fp, fetched_at, content_fp, published_at)
SELECT v.url_fp, to_timestamp(v.fetched_ms / 1000.0), v.content_fp, to_timestamp(NULLIF(v.published_ms, 0) / 1000.0)
FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::bigint[]) AS v(url_fp, fetched_ms, content_fp, published_ms)
ON CONFLICT DO NOTHING
"""

_UPDATE_VERDICTS = """
UPDATE linkbase.urls AS u SET duplicate_of = v.duplicate_of
FROM unnest(%s::bigint[], %s::text[]) AS v(url_fp, duplicate_of)
WHERE u.url_fp = v.url_fp AND u.duplicate_of IS DISTINCT FROM v.duplicate_of
"""

_INSERT_HISTORY = """
INSERT INTO linkbase.fetch_history (url_fp, request_id, attempt, status, http_status, fetched_at, elapsed_ms, error)
SELECT v.url_fp, v.request_id, v.attempt, v.status, NULLIF(v.http_status, 0), to_timestamp(v.ms / 1000.0),
       v.elapsed_ms, NULLIF(v.error, '')
FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::smallint[], %s::int[], %s::bigint[], %s::int[], %s::text[])
     AS v(url_fp, request_id, attempt, status, http_status, ms, elapsed_ms, error)
ON CONFLICT DO NOTHING
"""

_UPDATE_LAST_FETCH = """
UPDATE linkbase.urls AS u
SET last_fetch_status = v.status, http_status = NULLIF(v.http_status, 0), fetched_at = v.fetched_at
FROM (SELECT x.url_fp, x.status, x.http_status, to_timestamp(x.ms / 1000.0) AS fetched_at
      FROM unnest(%s::bigint[], %s::smallint[], %s::int[], %s::bigint[]) AS x(url_fp, status, http_status, ms)) AS v
WHERE u.url_fp = v.url_fp AND (u.fetched_at IS NULL OR u.fetched_at <= v.fetched_at)
"""

_UPDATE_AVAILABILITY = """
UPDATE linkbase.hosts AS h SET available = v.available
FROM unnest(%s::bigint[], %s::boolean[]) AS v(host_id, available)
WHERE h.host_id = v.host_id AND h.available <> v.available
"""

Conn = AsyncConnection[Any]


class LinkStore:
    """Applies one :class:`LinkbaseBatch` in one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def write(self, batch: LinkbaseBatch) -> None:
        async with self._db.transaction() as conn:
            await self._write_hosts(conn, batch)
            await self._write_page_links(conn, batch)
            await self._write_documents(conn, batch)
            await self._write_verdicts(conn, batch)
            await self._write_outcomes(conn, batch)

    async def _write_hosts(self, conn: Conn, batch: LinkbaseBatch) -> None:
        rows = [batch.hosts[hid] for hid in sorted(batch.hosts)]
        if rows:
            await conn.execute(
                _UPSERT_HOSTS,
                ([r.host_id for r in rows], [r.host for r in rows], [r.registered_domain for r in rows]),
            )

    async def _ensure_urls(self, conn: Conn, refs: list[UrlRef], *, fetched: bool) -> set[int]:
        """Gives every URL a row; with ``fetched``, marks them fetched and counts the newly fetched per host.

        Returns the fingerprints of the URLs recorded as fetched for the first time. A URL
        first recorded here is already known to the scheduler (state 2: never announced).
        """
        unique = {r.fp: r for r in refs}
        if not unique:
            return set()
        fps = sorted(unique)
        newly: list[tuple[int, int]] = []
        if fetched:
            cur = await conn.execute(_MARK_FETCHED, (fps,))
            newly.extend(await cur.fetchall())
        cur = await conn.execute(
            _INSERT_SEEN, (fetched, fps, [unique[fp].url for fp in fps], [unique[fp].host_id for fp in fps])
        )
        inserted = await cur.fetchall()
        if not fetched:
            return set()
        newly.extend(inserted)
        per_host = Counter(host for _fp, host in newly)
        if per_host:
            hosts = sorted(per_host)
            await conn.execute(_COUNT_PAGES, (hosts, [per_host[h] for h in hosts]))
        return {fp for fp, _host in newly}

    async def _write_page_links(self, conn: Conn, batch: LinkbaseBatch) -> None:
        pages = batch.page_rows
        if not pages:
            return
        first_time = await self._ensure_urls(conn, [p.ref for p in pages], fetched=True)
        cur = await conn.execute(
            _UPDATE_PAGES,
            ([p.ref.fp for p in pages], [p.depth for p in pages], [p.fetched_at_ms for p in pages]),
        )
        depths: dict[int, int | None] = {fp: depth for fp, depth in await cur.fetchall()}
        links = batch.links
        bad = batch.bad_links
        recrawled = [p.ref.fp for p in pages if p.ref.fp not in first_time]
        if recrawled:
            await self._delete_stale(conn, recrawled, {(r.source_fp, r.target.fp) for r in links},
                                     {(r.source_fp, r.href_hash) for r in bad})
        await self._upsert_targets(conn, targets_of(links, depths))
        if links:
            await conn.execute(
                _UPSERT_LINKS,
                (
                    [r.source_fp for r in links],
                    [r.target.fp for r in links],
                    [r.anchor for r in links],
                    [r.link_class for r in links],
                    [r.nofollow for r in links],
                ),
            )
        if bad:
            await conn.execute(
                _UPSERT_BAD,
                (
                    [r.source_fp for r in bad],
                    [r.href_hash for r in bad],
                    [r.href for r in bad],
                    [r.reason for r in bad],
                    [r.anchor for r in bad],
                ),
            )

    async def _delete_stale(
        self, conn: Conn, pages: list[int], links: set[tuple[int, int]], bad: set[tuple[int, int]]
    ) -> None:
        """A re-crawled page's out-links are replaced: links it no longer has are deleted."""
        steps = ((_EXISTING_LINKS, _DELETE_LINKS, links), (_EXISTING_BAD, _DELETE_BAD, bad))
        for existing_sql, delete_sql, keep in steps:
            cur = await conn.execute(existing_sql, (pages,))
            gone = sorted(row for row in await cur.fetchall() if row not in keep)
            if gone:
                await conn.execute(delete_sql, ([s for s, _ in gone], [t for _, t in gone]))
                log.debug("deleted %s out-links that re-crawled pages no longer have", len(gone))

    async def _upsert_targets(self, conn: Conn, targets: list[TargetRow]) -> None:
        if not targets:
            return
        await conn.execute(
            _UPSERT_TARGETS,
            (
                [t.ref.fp for t in targets],
                [t.ref.url for t in targets],
                [t.ref.host_id for t in targets],
                [t.depth for t in targets],
                [t.discovered_from_fp for t in targets],
                [1 if t.followable else 0 for t in targets],
            ),
        )

    async def _write_documents(self, conn: Conn, batch: LinkbaseBatch) -> None:
        docs = [batch.documents[fp] for fp in sorted(batch.documents)]
        if not docs:
            return
        await self._ensure_urls(conn, [d.ref for d in docs], fetched=True)
        await conn.execute(
            _UPDATE_DOCUMENTS,
            (
                [d.ref.fp for d in docs],
                [d.title for d in docs],
                [d.content_fp for d in docs],
                [d.published_at_ms for d in docs],
                [d.language for d in docs],
                [d.canonical_url for d in docs],
            ),
        )
        versions = [d for d in docs if d.fetched_at_ms > 0 and d.content_fp]
        if versions:
            await conn.execute(
                _INSERT_VERSIONS,
                (
                    [d.ref.fp for d in versions],
                    [d.fetched_at_ms for d in versions],
                    [d.content_fp for d in versions],
                    [d.published_at_ms for d in versions],
                ),
            )

    async def _write_verdicts(self, conn: Conn, batch: LinkbaseBatch) -> None:
        verdicts = [batch.verdicts[fp] for fp in sorted(batch.verdicts)]
        if not verdicts:
            return
        await self._ensure_urls(conn, [v.ref for v in verdicts], fetched=True)
        await conn.execute(_UPDATE_VERDICTS, ([v.ref.fp for v in verdicts], [v.duplicate_of for v in verdicts]))

    async def _write_outcomes(self, conn: Conn, batch: LinkbaseBatch) -> None:
        if not batch.outcomes:
            return
        rows = [batch.outcomes[key] for key in sorted(batch.outcomes)]
        await self._ensure_urls(conn, [r.ref for r in rows if r.succeeded], fetched=True)
        await self._ensure_urls(conn, [r.ref for r in rows if not r.succeeded], fetched=False)
        await conn.execute(
            _INSERT_HISTORY,
            (
                [r.ref.fp for r in rows],
                [r.request_id for r in rows],
                [r.attempt for r in rows],
                [r.status for r in rows],
                [r.http_status for r in rows],
                [r.fetched_at_ms for r in rows],
                [r.elapsed_ms for r in rows],
                [r.error for r in rows],
            ),
        )
        latest = batch.latest_outcomes()
        await conn.execute(
            _UPDATE_LAST_FETCH,
            (
                [r.ref.fp for r in latest],
                [r.status for r in latest],
                [r.http_status for r in latest],
                [r.fetched_at_ms for r in latest],
            ),
        )
        availability = batch.host_availability()
        if availability:
            await conn.execute(_UPDATE_AVAILABILITY, (list(availability), list(availability.values())))
