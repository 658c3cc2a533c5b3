"""A 304 to a conditional revisit is a content version equal to the page's last one.

The fetcher publishes no fetch result for a 304, so no document reaches the link base for it.
The page's content versions (``page_versions``, what the scheduler estimates a page's change
rate from) would then miss the visit that saw no change, and a page that never changes would
look as if it were seldom visited. This records, for each such outcome, a version at the
outcome's time with the URL's current content fingerprint (and publish date): one statement per
batch, idempotent (a version's key is the URL and its fetch time), nothing for a URL whose
content is not known yet.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from libs.common.wire import messages as pb
from services.linkbase.batch import LinkbaseBatch

_INSERT_UNCHANGED = """
INSERT INTO linkbase.page_versions (host_id, url_fp, fetched_at, content_fp, published_at)
SELECT u.host_id, u.url_fp, to_timestamp(v.ms / 1000.0), u.content_fp, u.published_at
FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS v(host_id, url_fp, ms)
JOIN linkbase.urls AS u ON u.host_id = v.host_id AND u.url_fp = v.url_fp
WHERE u.content_fp IS NOT NULL
ORDER BY u.host_id, u.url_fp, v.ms
ON CONFLICT DO NOTHING
"""


async def write_unchanged_versions(conn: AsyncConnection[Any], batch: LinkbaseBatch) -> None:
    rows = sorted((r for r in batch.outcomes.values()
                   if r.status == pb.FETCH_STATUS_NOT_MODIFIED and r.fetched_at_ms > 0),
                  key=lambda r: (r.ref.key, r.fetched_at_ms))
    if rows:
        await conn.execute(_INSERT_UNCHANGED, ([r.ref.host_id for r in rows], [r.ref.fp for r in rows],
                                               [r.fetched_at_ms for r in rows]))
