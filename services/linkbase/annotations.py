"""What the link base records about URLs besides links: documents, duplicate verdicts, fetch outcomes.

Documents set a URL's title, fingerprint, publish date, language and canonical URL and add a
content version. Verdicts set its duplicate state (unique, exact copy, near-duplicate of the
cluster's representative) and keep per-path counts of judged pages and duplicates, the
trap signal the outbox passes to the scheduler. Outcomes go into the fetch history, set the
URL's last status, and a fetch of a host's home page sets the host's availability.
All statements are idempotent; each is one round trip for the whole batch (the updates of URL rows
are planned as a probe per URL: ``libs/common/db/key_probes.py``). The URLs' rows are there already:
the store gives every URL of the batch its row first, in the same transaction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.key_probes import by_key_probes
from libs.common.url_keys import trap_path_key
from services.linkbase.batch import LinkbaseBatch

Conn = AsyncConnection[Any]

_UPDATE_DOCUMENTS = """
UPDATE linkbase.urls AS u
SET title = NULLIF(v.title, ''), content_fp = NULLIF(v.content_fp, ''),
    published_at = to_timestamp(NULLIF(v.published_ms, 0) / 1000.0),
    language = NULLIF(v.language, ''), canonical_url = v.canonical_url
FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::bigint[], %s::text[], %s::text[])
     AS v(host_id, url_fp, title, content_fp, published_ms, language, canonical_url)
WHERE u.host_id = v.host_id AND u.url_fp = v.url_fp
"""

_INSERT_VERSIONS = """
INSERT INTO linkbase.page_versions (host_id, url_fp, fetched_at, content_fp, published_at)
SELECT v.host_id, v.url_fp, to_timestamp(v.fetched_ms / 1000.0), v.content_fp,
       to_timestamp(NULLIF(v.published_ms, 0) / 1000.0)
FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::text[], %s::bigint[])
     AS v(host_id, url_fp, fetched_ms, content_fp, published_ms)
ON CONFLICT DO NOTHING
"""

# Returns the URLs whose verdict changed, with their state before and after (one snapshot).
_UPDATE_VERDICTS = """
WITH v AS (
    SELECT x.host_id, x.url_fp, x.state,
           CASE WHEN x.state = 1 THEN x.dup_of END AS exact_of, CASE WHEN x.state = 2 THEN x.dup_of END AS near_of,
           CASE WHEN x.state = 0 THEN NULL ELSE x.similarity END AS similarity
    FROM unnest(%s::bigint[], %s::bigint[], %s::smallint[], %s::text[], %s::real[])
         AS x(host_id, url_fp, state, dup_of, similarity)
), before AS (
    SELECT u.host_id, u.url_fp, u.dup_state FROM linkbase.urls AS u JOIN v USING (host_id, url_fp)
), changed AS (
    UPDATE linkbase.urls AS u
    SET dup_state = v.state, duplicate_of = v.exact_of, near_duplicate_of = v.near_of, similarity = v.similarity
    FROM v
    WHERE u.host_id = v.host_id AND u.url_fp = v.url_fp
      AND (u.dup_state, u.duplicate_of, u.near_duplicate_of, u.similarity)
          IS DISTINCT FROM (v.state, v.exact_of, v.near_of, v.similarity)
    RETURNING u.host_id, u.url_fp, u.url, u.dup_state
)
SELECT c.host_id, c.url, b.dup_state, c.dup_state FROM changed AS c JOIN before AS b USING (host_id, url_fp)
"""

_COUNT_PATHS = """
INSERT INTO linkbase.path_stats AS p (host_id, path_key, judged, duplicates)
SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::bigint[])
ON CONFLICT (host_id, path_key) DO UPDATE
SET judged = p.judged + excluded.judged, duplicates = p.duplicates + excluded.duplicates
"""

_INSERT_FETCHES = """
INSERT INTO linkbase.fetch_history (host_id, url_fp, request_id, attempt, status, http_status, fetched_at, elapsed_ms,
                                    error)
SELECT v.host_id, v.url_fp, v.request_id, v.attempt, v.status, NULLIF(v.http_status, 0), to_timestamp(v.ms / 1000.0),
       v.elapsed_ms, NULLIF(v.error, '')
FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::smallint[], %s::int[], %s::bigint[], %s::int[],
            %s::text[])
     AS v(host_id, url_fp, request_id, attempt, status, http_status, ms, elapsed_ms, error)
ON CONFLICT DO NOTHING
"""

_UPDATE_LAST_FETCH = """
UPDATE linkbase.urls AS u
SET last_fetch_status = v.status, http_status = NULLIF(v.http_status, 0), fetched_at = v.fetched_at
FROM (SELECT x.host_id, x.url_fp, x.status, x.http_status, to_timestamp(x.ms / 1000.0) AS fetched_at
      FROM unnest(%s::bigint[], %s::bigint[], %s::smallint[], %s::int[], %s::bigint[])
           AS x(host_id, url_fp, status, http_status, ms)) AS v
WHERE u.host_id = v.host_id AND u.url_fp = v.url_fp AND (u.fetched_at IS NULL OR u.fetched_at <= v.fetched_at)
"""

_UPDATE_AVAILABILITY = """
UPDATE linkbase.hosts AS h SET available = v.available, availability_at = to_timestamp(v.ms / 1000.0)
FROM unnest(%s::bigint[], %s::boolean[], %s::bigint[]) AS v(host_id, available, ms)
WHERE h.host_id = v.host_id AND (h.availability_at IS NULL OR h.availability_at <= to_timestamp(v.ms / 1000.0))
  AND (h.available, h.availability_at) IS DISTINCT FROM (v.available, to_timestamp(v.ms / 1000.0))
"""


async def write_documents(conn: Conn, batch: LinkbaseBatch) -> None:
    docs = sorted(batch.documents.values(), key=lambda d: d.ref.key)
    if not docs:
        return
    await by_key_probes(conn, _UPDATE_DOCUMENTS, (
        [d.ref.host_id for d in docs], [d.ref.fp for d in docs], [d.title for d in docs],
        [d.content_fp for d in docs], [d.published_at_ms for d in docs], [d.language for d in docs],
        [d.canonical_url for d in docs],
    ))
    versions = [d for d in docs if d.fetched_at_ms > 0 and d.content_fp]
    if versions:
        await conn.execute(_INSERT_VERSIONS, (
            [d.ref.host_id for d in versions], [d.ref.fp for d in versions], [d.fetched_at_ms for d in versions],
            [d.content_fp for d in versions], [d.published_at_ms for d in versions],
        ))


async def write_verdicts(conn: Conn, batch: LinkbaseBatch) -> None:
    verdicts = sorted(batch.verdicts.values(), key=lambda v: v.ref.key)
    if not verdicts:
        return
    changed = await by_key_probes(conn, _UPDATE_VERDICTS, (
        [v.ref.host_id for v in verdicts], [v.ref.fp for v in verdicts], [v.dup_state for v in verdicts],
        [v.duplicate_of for v in verdicts], [v.similarity for v in verdicts],
    ))
    judged: Counter[tuple[int, str]] = Counter()
    duplicates: Counter[tuple[int, str]] = Counter()
    for host_id, url, before, after in changed:
        key = (host_id, trap_path_key(url))
        judged[key] += before is None
        duplicates[key] += (after != 0) - (before is not None and before != 0)
    keys = sorted(set(judged) | set(duplicates))
    keys = [k for k in keys if judged[k] or duplicates[k]]
    if keys:
        await conn.execute(_COUNT_PATHS, ([k[0] for k in keys], [k[1] for k in keys], [judged[k] for k in keys],
                                          [duplicates[k] for k in keys]))


async def write_outcomes(conn: Conn, batch: LinkbaseBatch) -> None:
    if not batch.outcomes:
        return
    rows = sorted(batch.outcomes.values(), key=lambda r: (r.ref.key, r.request_id))
    await conn.execute(_INSERT_FETCHES, (
        [r.ref.host_id for r in rows], [r.ref.fp for r in rows], [r.request_id for r in rows],
        [r.attempt for r in rows], [r.status for r in rows], [r.http_status for r in rows],
        [r.fetched_at_ms for r in rows], [r.elapsed_ms for r in rows], [r.error for r in rows],
    ))
    latest = sorted(batch.latest_outcomes(), key=lambda r: r.ref.key)
    await by_key_probes(conn, _UPDATE_LAST_FETCH, (
        [r.ref.host_id for r in latest], [r.ref.fp for r in latest], [r.status for r in latest],
        [r.http_status for r in latest], [r.fetched_at_ms for r in latest],
    ))
    availability = batch.host_availability()
    if availability:
        hosts = sorted(availability)
        await conn.execute(_UPDATE_AVAILABILITY, (
            hosts, [availability[h][0] for h in hosts], [availability[h][1] for h in hosts]))
