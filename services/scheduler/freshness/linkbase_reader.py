"""Reads the appearance history from the linkbase's tables (a :class:`~.history.SightingReader`).

Two sources, both in the linkbase's schema of the same database:

- ``linkbase.publish_history`` (the linkbase's publish-time history, when the table exists):
  one row per child a re-fetch of a hub revealed, with the hub's previous and current fetch
  times; the child's extracted publish date is its own ``urls.published_at``;
- ``linkbase.urls``: every URL with an extracted publish date in the window, with the page it
  was discovered from. This covers items found on a page's first fetch (a hub's backlog),
  whose appearance the midpoint rule cannot tell but whose publish date can. Without
  ``publish_history`` (an older linkbase), it is the only source.

The appearance rule itself is applied by :func:`~.history.appearances`, whatever the source.
A linkbase that is not there (another database, a schema not migrated) reads as no history.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import psycopg

from libs.common.db.pool import Database
from services.scheduler.freshness.history import Sighting

log = logging.getLogger(__name__)

_REVEALED = """
SELECT hub.url, child.url, child.published_at, p.previous_fetch_at, p.fetched_at
FROM linkbase.publish_history AS p
JOIN linkbase.urls AS hub ON hub.host_id = p.hub_host_id AND hub.url_fp = p.hub_fp
JOIN linkbase.urls AS child ON child.host_id = p.child_host_id AND child.url_fp = p.child_fp
WHERE p.fetched_at BETWEEN %(since)s AND %(until)s OR child.published_at BETWEEN %(since)s AND %(until)s
"""

_PUBLISHED = """
SELECT src.url, u.url, u.published_at
FROM linkbase.urls AS u
LEFT JOIN linkbase.urls AS src ON src.host_id = u.discovered_from_host_id AND src.url_fp = u.discovered_from_fp
WHERE u.published_at BETWEEN %(since)s AND %(until)s
"""

_PUBLISHED_UNPARTITIONED = """
SELECT src.url, u.url, u.published_at
FROM linkbase.urls AS u
LEFT JOIN linkbase.urls AS src ON src.url_fp = u.discovered_from_fp
WHERE u.published_at BETWEEN %(since)s AND %(until)s
"""


def _seconds(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


class LinkbaseSightings:
    """The linkbase's children pages, as sightings for the freshness trainer."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def sightings(self, since: float, until: float) -> list[Sighting]:
        window = {"since": datetime.fromtimestamp(since, UTC), "until": datetime.fromtimestamp(until, UTC)}
        try:
            async with self._db.connection() as conn:
                tables = await self._tables(conn)
                out: list[Sighting] = []
                if "publish_history" in tables:
                    cur = await conn.execute(_REVEALED, window)
                    out.extend(
                        Sighting(child, hub, _seconds(published), _seconds(last), _seconds(now))
                        for hub, child, published, last, now in await cur.fetchall()
                    )
                if "urls" in tables:
                    partitioned = "discovered_from_host_id" in await self._columns(conn, "urls")
                    cur = await conn.execute(_PUBLISHED if partitioned else _PUBLISHED_UNPARTITIONED, window)
                    out.extend(Sighting(child, parent, _seconds(published))
                               for parent, child, published in await cur.fetchall())
                return out
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn,
                psycopg.errors.InsufficientPrivilege) as exc:
            log.warning("the linkbase's history cannot be read here: %s", exc)
            return []

    @staticmethod
    async def _tables(conn: psycopg.AsyncConnection[Any]) -> set[str]:
        cur = await conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'linkbase' AND c.relname IN ('publish_history', 'urls')"
        )
        return {str(r[0]) for r in await cur.fetchall()}

    @staticmethod
    async def _columns(conn: psycopg.AsyncConnection[Any], table: str) -> set[str]:
        cur = await conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'linkbase' AND table_name = %s",
            (table,),
        )
        return {str(r[0]) for r in await cur.fetchall()}
