"""What the admin API reads and removes in the frontier: seeds, hosts, one URL, the best pages.

Reads only, except :meth:`AdminStore.remove_urls`, which never touches a URL in flight (its
outcome must still find the row, to release the host's slot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from libs.common.db.pool import Database

HOST_ORDER = {"queued": 3, "in_flight": 4, "fetched": 5, "failed": 6}  # column of the host statistics


@dataclass(frozen=True)
class SeedRow:
    url: str
    status: str
    added_at: datetime
    fetched_at: datetime | None


@dataclass(frozen=True)
class HostRow:
    host: str
    partition: int
    queued: int
    in_flight: int
    fetched: int
    failed: int
    blocked: int
    errors: int
    next_allowed_at: datetime
    slots: int
    site: bool


@dataclass(frozen=True)
class FrontierRow:
    url: str
    host: str
    status: str
    priority: float
    next_fetch_at: datetime
    attempts: int
    depth: int
    request_id: str | None
    dispatched_at: datetime | None
    fetched_at: datetime | None
    http_status: int | None
    last_outcome: str | None
    last_error: str | None
    discovered_at: datetime
    source: str
    host_in_flight: int
    host_slots: int
    host_next_allowed_at: datetime | None


_HOST_STATS = (
    "SELECT h.host, h.partition,"
    "  count(*) FILTER (WHERE f.status = 'queued'), count(*) FILTER (WHERE f.status = 'in_flight'),"
    "  count(*) FILTER (WHERE f.status = 'fetched'), count(*) FILTER (WHERE f.status = 'failed'),"
    "  count(*) FILTER (WHERE f.status = 'blocked'), h.errors, h.next_allowed_at, h.slots,"
    "  coalesce(p.site_added_at IS NOT NULL OR p.removed, false)"
    " FROM scheduler.hosts h"
    " LEFT JOIN scheduler.frontier f ON f.host = h.host"
    " LEFT JOIN scheduler.host_policies p ON p.host = h.host"
)
_HOST_GROUP = " GROUP BY h.host, h.partition, h.errors, h.next_allowed_at, h.slots, p.site_added_at, p.removed"


class AdminStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def remove_urls(self, fps: Sequence[int]) -> tuple[int, list[str]]:
        """Removes the URLs that are not in flight; returns how many went and the URLs in flight."""
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "DELETE FROM scheduler.frontier WHERE url_fp = ANY(%s) AND status <> 'in_flight'",
                (sorted(set(fps)),),
            )
            removed = cur.rowcount
            cur = await conn.execute(
                "SELECT url FROM scheduler.frontier WHERE url_fp = ANY(%s) AND status = 'in_flight' ORDER BY url",
                (sorted(set(fps)),),
            )
            return removed, [str(r[0]) for r in await cur.fetchall()]

    async def seeds(self, limit: int, host: str = "") -> tuple[list[SeedRow], int]:
        """The newest ``limit`` seeds (of ``host``, if named) and how many there are."""
        where = "source = 'seed'" + (" AND host = %(host)s" if host else "")
        async with self._db.connection() as conn:
            cur = await conn.execute(
                f"SELECT url, status, discovered_at, fetched_at FROM scheduler.frontier WHERE {where}"
                " ORDER BY discovered_at DESC, url LIMIT %(limit)s",
                {"host": host, "limit": limit},
            )
            rows = [SeedRow(*r) for r in await cur.fetchall()]
            total = await (await conn.execute(
                f"SELECT count(*) FROM scheduler.frontier WHERE {where}", {"host": host}
            )).fetchone()
        return rows, int(total[0]) if total else 0

    async def host_stats(self, hosts: Sequence[str], limit: int, order_by: str = "queued") -> list[HostRow]:
        """Counts of the named ``hosts``, or of the ``limit`` hosts with the most URLs in ``order_by``."""
        async with self._db.connection() as conn:
            if hosts:
                cur = await conn.execute(
                    _HOST_STATS + " WHERE h.host = ANY(%s)" + _HOST_GROUP + " ORDER BY h.host", (list(hosts),)
                )
            else:
                column = HOST_ORDER.get(order_by, HOST_ORDER["queued"])
                cur = await conn.execute(
                    _HOST_STATS + _HOST_GROUP + f" ORDER BY {column} DESC, h.host LIMIT %s", (limit,)
                )
            return [HostRow(*r) for r in await cur.fetchall()]

    async def site_stats(self) -> list[HostRow]:
        """Counts of every host added or removed as a site."""
        async with self._db.connection() as conn:
            cur = await conn.execute(
                _HOST_STATS + " WHERE p.site_added_at IS NOT NULL OR p.removed" + _HOST_GROUP + " ORDER BY h.host"
            )
            return [HostRow(*r) for r in await cur.fetchall()]

    async def url(self, url_fp: int) -> FrontierRow | None:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT f.url, f.host, f.status, f.priority, f.next_fetch_at, f.attempts, f.depth, f.request_id,"
                "  f.dispatched_at, f.fetched_at, f.http_status, f.last_outcome, f.last_error, f.discovered_at,"
                "  f.source, coalesce(h.in_flight, 0), coalesce(h.slots, 1), h.next_allowed_at"
                " FROM scheduler.frontier f LEFT JOIN scheduler.hosts h ON h.host = f.host WHERE f.url_fp = %s",
                (url_fp,),
            )
            row = await cur.fetchone()
            return FrontierRow(*row) if row else None

    async def top_by_priority(self, limit: int, host: str = "") -> list[tuple[str, str, float, str]]:
        """(url, host, priority, status) of the URLs with the highest priority the scheduler holds."""
        where = " WHERE host = %(host)s" if host else ""
        async with self._db.connection() as conn:
            cur = await conn.execute(
                f"SELECT url, host, priority, status FROM scheduler.frontier{where}"
                " ORDER BY priority DESC, url_fp LIMIT %(limit)s",
                {"host": host, "limit": limit},
            )
            return [(str(u), str(h), float(p), str(s)) for u, h, p, s in await cur.fetchall()]

    async def statuses(self, fps: Sequence[int]) -> dict[int, str]:
        """Frontier status of each of the URL fingerprints ``fps`` it has."""
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT url_fp, status FROM scheduler.frontier WHERE url_fp = ANY(%s)", (list(fps),)
            )
            return {int(fp): str(s) for fp, s in await cur.fetchall()}
