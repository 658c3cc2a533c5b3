"""What other services keep about a URL, read for the admin API's URL report and top pages.

The importance service's OPIC estimates and the linkbase's fetch history and content
versions live in the same database, in schemas the scheduler does not own: it reads them
only through the read views their owners publish (``importance.v_pages_v1``,
``linkbase.v_fetch_history_v1``, ``linkbase.v_page_versions_v1``; their migrations create
them). Each read here is one statement in its own savepoint that takes a row as JSON and
picks the fields it knows, and a view that is not there (another database, a schema not
migrated yet, no right to read it) gives None: the report then says what the scheduler
itself knows (the priority the importance updates gave it). A URL's history is read by its
host and fingerprint: the host finds the linkbase partition.

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
_TOLERATED = (  # the view, a column or the schema is not there, or not ours to read
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
    rows = await _rows(db, "SELECT to_jsonb(p) FROM importance.v_pages_v1 p WHERE p.url_fp = %s", (url_fp,))
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
        " 'history', p.history) FROM importance.v_pages_v1 p " + where
        + "ORDER BY p.history + p.cash DESC, p.url_fp LIMIT %s",
        (host, limit) if host else (limit,),
    )
    if rows is None:
        return None
    return [(_int(r, "url_fp"), str(r.get("url", "")), str(r.get("host", "")), _float(r, "cash"),
             _float(r, "history")) for r in rows]


_FETCH_HISTORY = (
    "SELECT to_jsonb(t) FROM linkbase.v_fetch_history_v1 t WHERE t.host = %s AND t.url_fp = %s"
    " ORDER BY t.fetched_at DESC LIMIT %s"
)
_VERSIONS = (
    "SELECT to_jsonb(t) FROM linkbase.v_page_versions_v1 t WHERE t.host = %s AND t.url_fp = %s"
    " ORDER BY t.fetched_at DESC LIMIT %s"
)


async def fetch_history(db: Database, url_fp: int, host: str, limit: int) -> list[FetchRow]:
    rows = await _rows(db, _FETCH_HISTORY, (host, url_fp, limit))
    return [
        FetchRow(str(r.get("request_id", "")), _int(r, "attempt"), _int(r, "status"), _int(r, "http_status"),
                 _time(r, "fetched_at"), _int(r, "elapsed_ms"), str(r.get("error") or ""))
        for r in rows or []
    ]


async def versions(db: Database, url_fp: int, host: str, limit: int) -> list[VersionRow]:
    """Content versions of the page, newest first."""
    rows = await _rows(db, _VERSIONS, (host, url_fp, limit))
    return [VersionRow(_time(r, "fetched_at"), str(r.get("content_fp", "")), _time(r, "published_at"))
            for r in rows or []]


def changes_per_day(newest_first: Sequence[VersionRow]) -> float | None:
    """Estimated content changes per day from consecutive versions; None with fewer than two."""
    known = [v for v in reversed(newest_first) if v.fetched_at is not None]
    history = history_of_versions([v.fetched_at.timestamp() for v in known if v.fetched_at is not None],
                                  [v.content_fp for v in known])
    rate = change_rate(history)
    return None if rate is None else rate * DAY
