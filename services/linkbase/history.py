"""The publish-time history the freshness models learn from (seed 001).

For each re-fetch of a hub page: the child URLs it links to now and did not link to at its
previous fetch, with the previous fetch time T_last and the current one T_now. The child
appeared in T_last < t <= T_now; when the two fetches are less than an hour apart the
midpoint is taken as its appearance time, otherwise it is left unknown. A page's first
fetch has no T_last and records nothing; so does a redelivered fetch (T_now not after the
stored one). The child's extracted publish date is read at query time from its own row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from services.linkbase.rows import LinkRow, PageRow

MIDPOINT_MAX_GAP_MS = 3_600_000

_INSERT_HISTORY = """
INSERT INTO linkbase.publish_history (hub_host_id, hub_fp, fetched_at, child_fp, child_host_id, previous_fetch_at,
                                      inferred_at)
SELECT v.hub_host_id, v.hub_fp, to_timestamp(v.now_ms / 1000.0), v.child_fp, v.child_host_id,
       to_timestamp(v.last_ms / 1000.0), to_timestamp(NULLIF(v.inferred_ms, 0) / 1000.0)
FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])
     AS v(hub_host_id, hub_fp, now_ms, child_fp, child_host_id, last_ms, inferred_ms)
ON CONFLICT DO NOTHING
"""


@dataclass(frozen=True, slots=True)
class RevealedChild:
    hub_host_id: int
    hub_fp: int
    fetched_at_ms: int
    child_host_id: int
    child_fp: int
    previous_fetch_at_ms: int

    @property
    def inferred_at_ms(self) -> int | None:
        """The midpoint of T_last and T_now when they are less than an hour apart, else None."""
        gap = self.fetched_at_ms - self.previous_fetch_at_ms
        if gap >= MIDPOINT_MAX_GAP_MS:
            return None
        return self.previous_fetch_at_ms + gap // 2


def revealed_children(
    pages: Sequence[PageRow],
    previous_fetch_ms: Mapping[int, int | None],
    targets_before: Mapping[int, set[int]],
    links: Sequence[LinkRow],
) -> list[RevealedChild]:
    """The children each re-fetched page links to now and did not at its previous fetch."""
    eligible: dict[int, tuple[PageRow, int]] = {}
    for page in pages:
        last = previous_fetch_ms.get(page.ref.fp)
        if last is not None and page.fetched_at_ms > last:
            eligible[page.ref.fp] = (page, last)
    rows: list[RevealedChild] = []
    for link in links:
        found = eligible.get(link.source.fp)
        if found is None or link.target.fp in targets_before.get(link.source.fp, ()):
            continue
        page, last = found
        rows.append(RevealedChild(page.ref.host_id, page.ref.fp, page.fetched_at_ms, link.target.host_id,
                                  link.target.fp, last))
    return rows


async def write_history(conn: AsyncConnection[Any], rows: Sequence[RevealedChild]) -> None:
    if not rows:
        return
    await conn.execute(_INSERT_HISTORY, (
        [r.hub_host_id for r in rows], [r.hub_fp for r in rows], [r.fetched_at_ms for r in rows],
        [r.child_fp for r in rows], [r.child_host_id for r in rows], [r.previous_fetch_at_ms for r in rows],
        [r.inferred_at_ms or 0 for r in rows],
    ))
