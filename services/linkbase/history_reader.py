"""A URL's history: its fetches, its content versions, and its publish-time history (seed 001).

As a hub, the children its re-fetches revealed; as a child, the hub fetches that revealed it.
The child's publish date is its own extracted date (``urls.published_at``). Lists are newest
first, each cut to the requested limit.
"""

from __future__ import annotations

from libs.common.db.pool import Database
from libs.common.wire import linkbase as lb_pb
from services.linkbase.rows import UrlRef

_MS = "(extract(epoch FROM {}) * 1000)::bigint"

_FETCHES = f"""
SELECT request_id, attempt, status, COALESCE(http_status, 0), {_MS.format('fetched_at')}, COALESCE(elapsed_ms, 0),
       COALESCE(error, '')
FROM linkbase.fetch_history WHERE host_id = %s AND url_fp = %s ORDER BY fetched_at DESC, request_id LIMIT %s
"""
_VERSIONS = f"""
SELECT {_MS.format('fetched_at')}, content_fp, COALESCE({_MS.format('published_at')}, 0)
FROM linkbase.page_versions WHERE host_id = %s AND url_fp = %s ORDER BY fetched_at DESC LIMIT %s
"""
_ROW = f"""
SELECT hub.url, child.url, {_MS.format('p.fetched_at')}, {_MS.format('p.previous_fetch_at')},
       COALESCE({_MS.format('child.published_at')}, 0), COALESCE({_MS.format('p.inferred_at')}, 0)
FROM linkbase.publish_history AS p
JOIN linkbase.urls AS hub ON hub.host_id = p.hub_host_id AND hub.url_fp = p.hub_fp
JOIN linkbase.urls AS child ON child.host_id = p.child_host_id AND child.url_fp = p.child_fp
"""
_REVEALED = _ROW + " WHERE p.hub_host_id = %s AND p.hub_fp = %s ORDER BY p.fetched_at DESC, child.url LIMIT %s"
_REVEALED_BY = _ROW + " WHERE p.child_fp = %s AND p.child_host_id = %s ORDER BY p.fetched_at DESC, hub.url LIMIT %s"


class HistoryReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def history(self, ref: UrlRef, limit: int) -> lb_pb.UrlHistory:
        out = lb_pb.UrlHistory(url=ref.url)
        async with self._db.connection() as conn:
            cur = await conn.execute(_FETCHES, (*ref.key, limit))
            for rid, attempt, status, http, at, elapsed, error in await cur.fetchall():
                out.fetches.append(lb_pb.FetchEvent(request_id=rid, attempt=attempt, status=status, http_status=http,
                                                    fetched_at_ms=at, elapsed_ms=elapsed, error=error))
            cur = await conn.execute(_VERSIONS, (*ref.key, limit))
            for at, fp, published in await cur.fetchall():
                out.versions.append(lb_pb.PageVersion(fetched_at_ms=at, content_fingerprint=fp,
                                                      published_at_ms=published))
            cur = await conn.execute(_REVEALED, (*ref.key, limit))
            out.revealed.extend(_child(row) for row in await cur.fetchall())
            cur = await conn.execute(_REVEALED_BY, (ref.fp, ref.host_id, limit))
            out.revealed_by.extend(_child(row) for row in await cur.fetchall())
        return out


def _child(row: tuple[str, str, int, int, int, int]) -> lb_pb.RevealedChild:
    hub, child, now_ms, last_ms, published_ms, inferred_ms = row
    return lb_pb.RevealedChild(hub_url=hub, child_url=child, fetched_at_ms=now_ms, previous_fetch_at_ms=last_ms,
                               child_published_at_ms=published_ms, inferred_at_ms=inferred_ms)
