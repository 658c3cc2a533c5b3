"""Which URLs the link base knows: the "seen" test, answered by the primary key index.

Every URL row is keyed (host id, URL fingerprint); the host id comes from the URL itself,
so a probe names its partition and is one index lookup, for one URL or a batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.key_probes import by_key_probes
from services.linkbase.rows import UrlRef

Conn = AsyncConnection[Any]

# LATERAL ... LIMIT 1: one primary-key probe per URL, whatever the planner thinks of the batch's size
# (a plain join of a large batch may be planned as a hash join over a scan of every partition).
SEEN_SQL = """
SELECT k.url_fp FROM unnest(%s::bigint[], %s::bigint[]) AS k(host_id, url_fp)
CROSS JOIN LATERAL (SELECT 1 FROM linkbase.urls AS u WHERE u.host_id = k.host_id AND u.url_fp = k.url_fp
                    LIMIT 1) AS hit
"""

_MARK_FETCHED = """
UPDATE linkbase.urls AS u SET fetched = true, announce_state = 2
FROM unnest(%s::bigint[], %s::bigint[]) AS v(host_id, url_fp)
WHERE u.host_id = v.host_id AND u.url_fp = v.url_fp AND NOT u.fetched
RETURNING u.url_fp, u.host_id
"""

_INSERT_SEEN = """
INSERT INTO linkbase.urls (host_id, url_fp, url, fetched, announce_state)
SELECT v.host_id, v.url_fp, v.url, %s, 2
FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS v(host_id, url_fp, url)
ON CONFLICT (host_id, url_fp) DO NOTHING
RETURNING url_fp, host_id
"""

_COUNT_PAGES = """
UPDATE linkbase.hosts AS h SET pages_fetched = h.pages_fetched + v.n
FROM unnest(%s::bigint[], %s::bigint[]) AS v(host_id, n)
WHERE h.host_id = v.host_id
"""


async def seen(conn: Conn, refs: Sequence[UrlRef]) -> set[int]:
    """The fingerprints of ``refs`` that already have a row (index probes only)."""
    if not refs:
        return set()
    keys = sorted({r.key for r in refs})
    cur = await conn.execute(SEEN_SQL, ([k[0] for k in keys], [k[1] for k in keys]))
    return {fp for (fp,) in await cur.fetchall()}


async def ensure_urls(conn: Conn, refs: list[UrlRef], *, fetched: bool) -> set[int]:
    """Gives every URL a row; with ``fetched``, marks them fetched and counts the newly fetched per host.

    Returns the fingerprints of the URLs recorded as fetched for the first time. A URL
    first recorded here is already known to the scheduler (state 2: never announced).
    """
    unique = {r.key: r for r in refs}
    if not unique:
        return set()
    keys = sorted(unique)
    hosts, fps = [k[0] for k in keys], [k[1] for k in keys]
    newly: list[tuple[int, int]] = []
    if fetched:
        newly.extend(await by_key_probes(conn, _MARK_FETCHED, (hosts, fps)))
    cur = await conn.execute(_INSERT_SEEN, (fetched, hosts, fps, [unique[k].url for k in keys]))
    inserted = await cur.fetchall()
    if not fetched:
        return set()
    newly.extend(inserted)
    per_host = Counter(host for _fp, host in newly)
    if per_host:
        ids = sorted(per_host)
        await conn.execute(_COUNT_PAGES, (ids, [per_host[h] for h in ids]))
    return {fp for fp, _host in newly}
