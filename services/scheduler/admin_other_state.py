"""What other services keep about a URL, read for the admin API's URL report and top pages.

The importance service's OPIC state (``importance.pages``) and the linkbase's fetch history
and content versions (``linkbase.fetch_history``, ``linkbase.page_versions``) live in the
same database, in schemas the scheduler does not own and whose columns may change. Each read
here is one statement in its own savepoint that takes a row as JSON and picks the fields it
knows, so a renamed or missing column leaves a field out and a missing table (another
database, a schema not migrated yet, no right to read it) gives None: the report then says
what the scheduler itself knows (the priority the importance updates gave it). The linkbase
partitions its tables by host id: a URL's history is read with its host's id, taken from
``linkbase.hosts`` by name, so one partition's index answers; a link base without host ids
is read by URL fingerprint alone.

The change rate of a page is Cho and Garcia-Molina's estimator over its content versions
(``services/scheduler/freshness/estimator.py``, the one the revisit planner uses).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from libs.common.db.pool import Database
from services.scheduler.freshness.estimator import change_rate, history_of_versions

log = logging.getLogger(__name__)
DAY = 86400.0
_TOLERATED = (  # the table, a column or the schema is not there, or not ours to read
    psycopg.errors.UndefinedTable,
    psycopg.errors.UndefinedColumn,
    psycopg.errors.UndefinedFunction,
    psycopg.errors.InvalidSchemaName,
    psycopg.errors.InsufficientPrivilege,
)


@dataclass(frozen=True)
class ImportanceRow:
    cash: float
    history: float
    visits: int
    last_visit: datetime | None

    @property
    def importance(self) -> float:
        return self.history + self.cash


@dataclass(frozen=True)
class FetchRow:
    request_id: str
    attempt: int
    status: int
    http_status: int
    fetched_at: datetime | None
    elapsed_ms: int
    error: str


@dataclass(frozen=True)
class VersionRow:
    fetched_at: datetime | None
    content_fp: str
    published_at: datetime | None


def _float(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) else 0.0


def _int(row: dict[str, Any], key: str) -> int:
    value = row.get(key)
    return int(value) if isinstance(value, (int, float)) else 0


def _time(row: dict[str, Any], key: str) -> datetime | None:
    value = row.get(key)
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


async def _rows(db: Database, query: str, params: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The JSON rows of ``query`` (one ``to_jsonb`` column), or None when the table cannot be read."""
    try:
        async with db.connection() as conn, conn.transaction():
            cur = await conn.execute(query.encode(), params)
            return [row[0] for row in await cur.fetchall()]
    except _TOLERATED as exc:
        log.debug("another service's state is not readable here: %s", exc)
        return None


async def importance_of(db: Database, url_fp: int) -> ImportanceRow | None:
    rows = await _rows(db, "SELECT to_jsonb(p) FROM importance.pages p WHERE p.url_fp = %s", (url_fp,))
    if not rows:
        return None
    row = rows[0]
    return ImportanceRow(_float(row, "cash"), _float(row, "history"), _int(row, "visits"), _time(row, "last_visit"))


async def top_importance(db: Database, limit: int, host: str = "") -> list[tuple[int, str, str, float, float]] | None:
    """(url fp, url, host, cash, history) of the pages with the most history plus cash, or None."""
    where = "WHERE p.host = %s " if host else ""
    rows = await _rows(
        db,
        "SELECT jsonb_build_object('url_fp', p.url_fp, 'url', p.url, 'host', p.host, 'cash', p.cash,"
        " 'history', p.history) FROM importance.pages p " + where
        + "ORDER BY p.history + p.cash DESC, p.url_fp LIMIT %s",
        (host, limit) if host else (limit,),
    )
    if rows is None:
        return None
    return [(_int(r, "url_fp"), str(r.get("url", "")), str(r.get("host", "")), _float(r, "cash"),
             _float(r, "history")) for r in rows]


async def _by_host(db: Database, table: str, url_fp: int, host: str, limit: int) -> list[dict[str, Any]] | None:
    """Rows of ``linkbase.<table>`` for one URL, newest first, found through its host's id if there is one."""
    partitioned = await _rows(
        db,
        f"SELECT to_jsonb(t) FROM linkbase.{table} t WHERE t.url_fp = %s"
        " AND t.host_id IN (SELECT h.host_id FROM linkbase.hosts h WHERE h.host = %s)"
        " ORDER BY t.fetched_at DESC LIMIT %s",
        (url_fp, host, limit),
    )
    if partitioned is not None:
        return partitioned
    return await _rows(
        db, f"SELECT to_jsonb(t) FROM linkbase.{table} t WHERE t.url_fp = %s ORDER BY t.fetched_at DESC LIMIT %s",
        (url_fp, limit),
    )


async def fetch_history(db: Database, url_fp: int, host: str, limit: int) -> list[FetchRow]:
    rows = await _by_host(db, "fetch_history", url_fp, host, limit)
    return [
        FetchRow(str(r.get("request_id", "")), _int(r, "attempt"), _int(r, "status"), _int(r, "http_status"),
                 _time(r, "fetched_at"), _int(r, "elapsed_ms"), str(r.get("error") or ""))
        for r in rows or []
    ]


async def versions(db: Database, url_fp: int, host: str, limit: int) -> list[VersionRow]:
    """Content versions of the page, newest first."""
    rows = await _by_host(db, "page_versions", url_fp, host, limit)
    return [VersionRow(_time(r, "fetched_at"), str(r.get("content_fp", "")), _time(r, "published_at"))
            for r in rows or []]


def changes_per_day(newest_first: Sequence[VersionRow]) -> float | None:
    """Estimated content changes per day from consecutive versions; None with fewer than two."""
    known = [v for v in reversed(newest_first) if v.fetched_at is not None]
    history = history_of_versions([v.fetched_at.timestamp() for v in known if v.fetched_at is not None],
                                  [v.content_fp for v in known])
    rate = change_rate(history)
    return None if rate is None else rate * DAY
