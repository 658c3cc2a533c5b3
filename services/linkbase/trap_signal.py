"""The trap signal: a priority penalty for URLs under paths where most pages are duplicates.

The link base counts, per path (host + first path segment, :func:`~libs.common.url_keys.trap_path_key`),
the pages dedup judged and how many were duplicates (exact or near). When at least
``min_judged`` pages were judged and more than ``duplicate_share`` of them were duplicates,
every URL announced under that path carries ``penalty`` on its discovery, and the scheduler
multiplies the priority of the path's URLs by ``1 - penalty`` (also those already queued).
A calendar, a session-id maze or a mirror of one article under endless URLs is caught this
way once its first pages come back as copies; healthy paths carry no penalty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

_PATHS = """
SELECT p.host_id, p.path_key, p.judged, p.duplicates
FROM unnest(%s::bigint[], %s::text[]) AS k(host_id, path_key)
JOIN linkbase.path_stats AS p ON p.host_id = k.host_id AND p.path_key = k.path_key
"""


@dataclass(frozen=True)
class TrapPolicy:
    min_judged: int
    duplicate_share: float
    penalty: float

    def penalty_for(self, judged: int, duplicates: int) -> float:
        if judged < self.min_judged or judged <= 0 or duplicates / judged <= self.duplicate_share:
            return 0.0
        return self.penalty


async def path_penalties(
    conn: AsyncConnection[Any], policy: TrapPolicy, paths: Iterable[tuple[int, str]]
) -> Mapping[tuple[int, str], float]:
    """The penalty of each (host id, path key) that has one (paths without a penalty are absent)."""
    keys = sorted(set(paths))
    if not keys:
        return {}
    cur = await conn.execute(_PATHS, ([k[0] for k in keys], [k[1] for k in keys]))
    out: dict[tuple[int, str], float] = {}
    for host, path, judged, duplicates in await cur.fetchall():
        penalty = policy.penalty_for(judged, duplicates)
        if penalty:
            out[(host, path)] = penalty
    return out
