"""Freshness state in PostgreSQL: model generations (shared by every replica) and per-page plans.

A training run writes one generation (its models, its key routes, the policy's waiting
target) and its hub pages in one transaction, then makes it current
(``scheduler.state['freshness_generation']``); replicas load the current generation and
plan with it, so all of them schedule with the same models. The last ``keep`` generations
are kept, for inspection and rollback. Which replica trains is settled by a claim in
``scheduler.state`` that only one replica can take per retraining interval.

Per-page plans (``scheduler.freshness_pages``) are read and written on the connection of the
frontier's own transaction (``revisit_hook``), so a plan and the outcome it follows commit
together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.arrays import float8_array, int4_array, int8_array, text_array, timestamptz_array
from libs.common.db.pool import Database
from services.scheduler.freshness.keys import Route
from services.scheduler.freshness.model import RateModel
from services.scheduler.freshness.rates import HourlyRates

Conn = AsyncConnection[Any]
STATE_KEY = "freshness_generation"
CLAIM_KEY = "freshness_training_claim"


@dataclass(frozen=True)
class Generation:
    """One training run's models, routes and waiting target."""

    generation: int
    trained_at: datetime
    window_start: datetime
    window_end: datetime
    waiting_target: float
    hub_interval: float
    models: Mapping[str, RateModel]
    routes: Mapping[str, Route]
    samples: Mapping[str, int] = field(default_factory=dict)

    def curve(self, key: str | None) -> HourlyRates | None:
        route = self.routes.get(key) if key else None
        return None if route is None else self.models[route.model_key].curve(route.share)


@dataclass(frozen=True)
class Hub:
    url_fp: int
    url: str
    host: str
    key: str
    items: int


@dataclass
class PageState:
    """A row of ``scheduler.freshness_pages``."""

    url_fp: int
    url: str
    host: str
    hub_key: str | None = None
    hub_items: int = 0
    last_fetch_at: datetime | None = None
    previous_fetch_at: datetime | None = None
    fetches: int = 0
    new_items: int = 0
    predicted_items: float = 0.0
    boost: float = 1.0
    boost_since: datetime | None = None
    visits: int = 0
    changes: int = 0
    span: float = 0.0
    policy: str | None = None
    reason: str | None = None
    rate: float | None = None
    expected_items: float | None = None
    planned_at: datetime | None = None
    generation: int | None = None


_COLUMNS = [f.name for f in fields(PageState)]


async def page_states(conn: Conn, url_fps: Iterable[int], lock: bool = True) -> dict[int, PageState]:
    """The pages' rows; with ``lock`` (inside a transaction) locked until it ends."""
    fps = sorted(set(url_fps))
    if not fps:
        return {}
    cur = await conn.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM scheduler.freshness_pages WHERE url_fp = ANY(%s) ORDER BY url_fp"
        + (" FOR UPDATE" if lock else ""),
        (fps,),
    )
    return {int(row[0]): PageState(*row) for row in await cur.fetchall()}


async def save_page_states(conn: Conn, states: Sequence[PageState]) -> None:
    rows = sorted(states, key=lambda s: s.url_fp)
    if not rows:
        return
    updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
    placeholders = ", ".join(["%s"] * len(_COLUMNS))
    await conn.cursor().executemany(
        f"INSERT INTO scheduler.freshness_pages ({', '.join(_COLUMNS)}) VALUES ({placeholders})"
        f" ON CONFLICT (url_fp) DO UPDATE SET {updates}",
        [tuple(getattr(s, c) for c in _COLUMNS) for s in rows],
    )


_TYPES = {"url_fp": "bigint", "url": "text", "host": "text", "hub_key": "text", "hub_items": "int",
          "last_fetch_at": "timestamptz", "previous_fetch_at": "timestamptz", "fetches": "int", "new_items": "int",
          "predicted_items": "float8", "boost": "float8", "boost_since": "timestamptz", "visits": "int",
          "changes": "int", "span": "float8", "policy": "text", "reason": "text", "rate": "float8",
          "expected_items": "float8", "planned_at": "timestamptz", "generation": "bigint"}
assert set(_TYPES) == set(_COLUMNS)
# Each type's array, encoded at once (libs/common/db/arrays.py): 22 columns of a batch's pages.
_ARRAYS: dict[str, Callable[[Any], Any]] = {"bigint": int8_array, "text": text_array, "int": int4_array,
                                            "timestamptz": timestamptz_array, "float8": float8_array}


def _column(states: Sequence[PageState], column: str) -> list[Any]:
    values = [getattr(s, column) for s in states]
    kind = _TYPES[column]
    if kind == "float8":
        return [None if v is None else float(v) for v in values]
    if kind in ("int", "bigint"):
        return [None if v is None else int(v) for v in values]
    return values


async def seen_page_states(conn: Conn, url_fps: Iterable[int]) -> dict[int, tuple[PageState, str]]:
    """The pages' rows, unlocked, each with the version it was read at (for :func:`save_page_states_unchanged`)."""
    fps = sorted(set(url_fps))
    if not fps:
        return {}
    cur = await conn.execute(
        f"SELECT xmin::text, {', '.join(_COLUMNS)} FROM scheduler.freshness_pages WHERE url_fp = ANY(%b::bigint[])",
        (fps,),
    )
    return {int(row[1]): (PageState(*row[1:]), str(row[0])) for row in await cur.fetchall()}


async def save_page_states_unchanged(conn: Conn, states: Sequence[tuple[PageState, str | None]]) -> set[int]:
    """Saves pages whose row is still the version read (``None``: there was no row); returns those saved.

    One statement: a row another transaction wrote since it was read (or inserted, for one that
    had none) is left as it is, for the caller to read again locked and plan once more.
    """
    rows = sorted(states, key=lambda s: s[0].url_fp)
    if not rows:
        return set()
    pages = [s for s, _ in rows]
    values = ", ".join(f"%({c})b::{_TYPES[c]}[]" for c in _COLUMNS)  # binary: arrays dump much faster
    names = ", ".join(_COLUMNS)
    updates = ", ".join(f"{c} = v.{c}" for c in _COLUMNS[1:])
    params: dict[str, Any] = {c: _ARRAYS[_TYPES[c]](_column(pages, c)) for c in _COLUMNS}
    params["seen"] = text_array([seen for _, seen in rows])
    cur = await conn.execute(
        f"WITH v AS (SELECT * FROM unnest({values}, %(seen)b::text[]) AS v({names}, seen)),"
        f" changed AS (UPDATE scheduler.freshness_pages p SET {updates} FROM v"
        "   WHERE v.seen IS NOT NULL AND p.url_fp = v.url_fp AND p.xmin = v.seen::xid RETURNING p.url_fp),"
        f" added AS (INSERT INTO scheduler.freshness_pages ({names}) SELECT {names} FROM v WHERE v.seen IS NULL"
        "   ORDER BY url_fp ON CONFLICT (url_fp) DO NOTHING RETURNING url_fp)"
        " SELECT url_fp FROM changed UNION ALL SELECT url_fp FROM added",
        params,
    )
    return {int(r[0]) for r in await cur.fetchall()}


class GenerationStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def current_id(self) -> int | None:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT value FROM scheduler.state WHERE key = %s", (STATE_KEY,))
            row = await cur.fetchone()
            return int(row[0]) if row else None

    async def load(self, generation: int) -> Generation | None:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT trained_at, window_start, window_end, waiting_target, hub_interval"
                " FROM scheduler.freshness_generations WHERE generation = %s",
                (generation,),
            )
            head = await cur.fetchone()
            if head is None:
                return None
            cur = await conn.execute(
                "SELECT model_key, rates, samples, hours, r2_cv, r2_holdout FROM scheduler.freshness_models"
                " WHERE generation = %s",
                (generation,),
            )
            models = {str(k): RateModel(tuple(float(r) for r in rates), int(s), int(h), float(cv), float(ho))
                      for k, rates, s, h, cv, ho in await cur.fetchall()}
            cur = await conn.execute(
                "SELECT key, model_key, share, samples FROM scheduler.freshness_routes WHERE generation = %s",
                (generation,),
            )
            routes: dict[str, Route] = {}
            samples: dict[str, int] = {}
            for key, model_key, share, count in await cur.fetchall():
                routes[str(key)] = Route(str(model_key), float(share))
                samples[str(key)] = int(count)
        return Generation(generation, head[0], head[1], head[2], float(head[3]), float(head[4]), models, routes,
                          samples)

    async def current(self) -> Generation | None:
        generation = await self.current_id()
        return None if generation is None else await self.load(generation)

    async def claim_training(self, now: datetime, interval: float) -> bool:
        """True for the one replica that trains now: no training was claimed in the last ``interval`` s."""
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO scheduler.state AS s (key, value) VALUES (%(key)s, %(now)s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                " WHERE s.value::timestamptz <= %(now)s::timestamptz - make_interval(secs => %(interval)s)"
                "    OR s.value::timestamptz > %(now)s::timestamptz"  # a clock set back (a test, a restart)
                " RETURNING value",
                {"key": CLAIM_KEY, "now": now.isoformat(), "interval": interval},
            )
            return await cur.fetchone() is not None

    async def save(
        self,
        trained_at: datetime,
        window: tuple[datetime, datetime],
        waiting_target: float,
        hub_interval: float,
        models: Mapping[str, RateModel],
        routes: Mapping[str, Route],
        samples: Mapping[str, int],
        hubs: Sequence[Hub],
        keep: int,
    ) -> int:
        """Writes a generation and its hubs, makes it current, prunes old ones; returns its number."""
        async with self._db.transaction() as conn:
            cur = await conn.execute("SELECT nextval('scheduler.freshness_generation_seq')")
            row = await cur.fetchone()
            assert row is not None
            generation = int(row[0])
            await conn.execute(
                "INSERT INTO scheduler.freshness_generations (generation, trained_at, window_start, window_end,"
                " waiting_target, hub_interval, items, hubs) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (generation, trained_at, window[0], window[1], waiting_target, hub_interval, sum(samples.values()),
                 len(hubs)),
            )
            if models:
                await conn.cursor().executemany(
                    "INSERT INTO scheduler.freshness_models (generation, model_key, rates, samples, hours, r2_cv,"
                    " r2_holdout) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    [(generation, k, list(m.rates_per_hour), m.samples, m.hours, m.r2_cv, m.r2_holdout)
                     for k, m in sorted(models.items())],
                )
            if routes:
                await conn.cursor().executemany(
                    "INSERT INTO scheduler.freshness_routes (generation, key, model_key, share, samples)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    [(generation, k, r.model_key, r.share, samples.get(k, 0)) for k, r in sorted(routes.items())],
                )
            await _mark_hubs(conn, hubs)
            await conn.execute(
                "INSERT INTO scheduler.state (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (STATE_KEY, str(generation)),
            )
            await conn.execute(
                "DELETE FROM scheduler.freshness_generations WHERE generation <= %s",
                (generation - max(1, keep),),
            )
        return generation


async def _mark_hubs(conn: Conn, hubs: Sequence[Hub]) -> None:
    """Pages in ``hubs`` become hubs of their key; every other page stops being one."""
    rows = sorted(hubs, key=lambda h: h.url_fp)
    fps = [h.url_fp for h in rows]
    await conn.execute(
        "UPDATE scheduler.freshness_pages SET hub_key = NULL, hub_items = 0"
        " WHERE hub_key IS NOT NULL AND url_fp <> ALL(%s::bigint[])",
        (fps,),
    )
    if rows:
        await conn.execute(
            "INSERT INTO scheduler.freshness_pages AS p (url_fp, url, host, hub_key, hub_items)"
            " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[])"
            " ON CONFLICT (url_fp) DO UPDATE SET hub_key = excluded.hub_key, hub_items = excluded.hub_items",
            (fps, [h.url for h in rows], [h.host for h in rows], [h.key for h in rows], [h.items for h in rows]),
        )
