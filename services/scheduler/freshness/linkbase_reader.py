"""Reads the appearance history from the linkbase's read views (a :class:`~.history.SightingReader`).

Two sources, both views the linkbase publishes in the same database (its migrations create
them; the scheduler never reads its tables):

- ``linkbase.v_revealed_children_v1`` (the linkbase's publish-time history): one row per
  child a re-fetch of a hub revealed, with the hub's previous and current fetch times and
  the child's extracted publish date;
- ``linkbase.v_published_pages_v1``: every URL with an extracted publish date, with the
  page it was discovered from. This covers items found on a page's first fetch (a hub's
  backlog), whose appearance the midpoint rule cannot tell but whose publish date can.

The appearance rule itself is applied by :func:`~.history.appearances`, whatever the source.
A linkbase that is not there (another database, a schema not migrated) reads as no history.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import psycopg

from libs.common.db.pool import Database
from services.scheduler.freshness.history import Sighting

log = logging.getLogger(__name__)

_REVEALED = """
SELECT hub_url, child_url, child_published_at, previous_fetch_at, fetched_at
FROM linkbase.v_revealed_children_v1
WHERE fetched_at BETWEEN %(since)s AND %(until)s OR child_published_at BETWEEN %(since)s AND %(until)s
"""

_PUBLISHED = """
SELECT discovered_from, url, published_at
FROM linkbase.v_published_pages_v1
WHERE published_at BETWEEN %(since)s AND %(until)s
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
                cur = await conn.execute(_REVEALED, window)
                out = [Sighting(child, hub, _seconds(published), _seconds(last), _seconds(now))
                       for hub, child, published, last, now in await cur.fetchall()]
                cur = await conn.execute(_PUBLISHED, window)
                out.extend(Sighting(child, parent, _seconds(published))
                           for parent, child, published in await cur.fetchall())
                return out
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName,
                psycopg.errors.InsufficientPrivilege) as exc:
            log.warning("the linkbase's history cannot be read here: %s", exc)
            return []
