"""OPIC state in PostgreSQL, applied one consumed batch per transaction.

The totals row is locked for the batch, so replicas apply batches one after another and
the conservation invariant holds across them. Offsets applied are stored in the same
transaction: a batch redelivered after a crash is skipped record by record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.pool import Database
from services.importance.opic import PageCash, Totals

CONSERVATION_SQL = (
    "SELECT coalesce(sum(p.cash - p.dividend_mark"
    "   + CASE WHEN p.crawled THEN t.crawled_dividend ELSE t.dividend END), 0)"
    " + t.virtual_cash, t.total_cash FROM importance.totals t LEFT JOIN importance.pages p ON true"
    " WHERE t.id = 1 GROUP BY t.virtual_cash, t.total_cash"
)
"""(cash accounted for, total cash): equal up to floating-point error, at every commit."""


class CashStore:
    def __init__(self, db: Database, total_cash: float) -> None:
        self._db = db
        self._total_cash = total_cash

    async def init(self) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO importance.totals (id, virtual_cash, total_cash) VALUES (1, %s, %s)"
                " ON CONFLICT (id) DO NOTHING",
                (self._total_cash, self._total_cash),
            )

    async def start(self) -> None:
        await self.init()

    async def stop(self) -> None:
        return None

    @staticmethod
    async def lock_totals(conn: AsyncConnection[Any]) -> Totals:
        cur = await conn.execute(
            "SELECT virtual_cash, dividend, uncrawled, history_total, total_cash, crawled, crawled_dividend"
            " FROM importance.totals WHERE id = 1 FOR UPDATE"
        )
        row = await cur.fetchone()
        if row is None:
            raise RuntimeError("importance.totals is not initialised")
        return Totals(
            float(row[0]), float(row[1]), int(row[2]), float(row[3]), float(row[4]), int(row[5]), float(row[6])
        )

    @staticmethod
    async def applied_offsets(conn: AsyncConnection[Any]) -> dict[tuple[str, int], int]:
        cur = await conn.execute("SELECT topic, partition, next_offset FROM importance.applied")
        return {(str(t), int(p)): int(o) for t, p, o in await cur.fetchall()}

    @staticmethod
    async def load_pages(conn: AsyncConnection[Any], fps: Iterable[int]) -> dict[int, PageCash]:
        ids = sorted(set(fps))
        if not ids:
            return {}
        cur = await conn.execute(
            "SELECT url_fp, url, host, cash, history, crawled, dividend_mark, visits,"
            " coalesce((extract(epoch from last_visit) * 1000)::bigint, 0)"
            " FROM importance.pages WHERE url_fp = ANY(%s) ORDER BY url_fp FOR UPDATE",
            (ids,),
        )
        return {
            int(r[0]): PageCash(int(r[0]), r[1], r[2], float(r[3]), float(r[4]), bool(r[5]), float(r[6]),
                                int(r[7]), int(r[8]))
            for r in await cur.fetchall()
        }

    @staticmethod
    async def save(
        conn: AsyncConnection[Any],
        pages: Sequence[PageCash],
        totals: Totals,
        offsets: dict[tuple[str, int], int],
    ) -> None:
        rows = sorted(pages, key=lambda p: p.url_fp)
        if rows:
            await conn.execute(
                "INSERT INTO importance.pages AS p"
                " (url_fp, url, host, cash, history, crawled, dividend_mark, visits, last_visit)"
                " SELECT fp, url, host, cash, hist, crawled, mark, visits,"
                "   CASE WHEN lv > 0 THEN to_timestamp(lv / 1000.0) END"
                " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::float8[], %s::bool[],"
                "   %s::float8[], %s::int[], %s::bigint[]) AS t(fp, url, host, cash, hist, crawled, mark, visits, lv)"
                " ON CONFLICT (url_fp) DO UPDATE SET cash = excluded.cash, history = excluded.history,"
                "   crawled = excluded.crawled, dividend_mark = excluded.dividend_mark, visits = excluded.visits,"
                "   last_visit = excluded.last_visit",
                (
                    [p.url_fp for p in rows], [p.url for p in rows], [p.host for p in rows],
                    [p.cash for p in rows], [p.history for p in rows], [p.crawled for p in rows],
                    [p.dividend_mark for p in rows], [p.visits for p in rows], [p.last_visit_ms for p in rows],
                ),
            )
        await conn.execute(
            "UPDATE importance.totals SET virtual_cash = %s, dividend = %s, uncrawled = %s, history_total = %s,"
            " crawled = %s, crawled_dividend = %s WHERE id = 1",
            (
                totals.virtual_cash, totals.dividend, totals.uncrawled, totals.history_total,
                totals.crawled, totals.crawled_dividend,
            ),
        )
        for (topic, partition), offset in sorted(offsets.items()):
            await conn.execute(
                "INSERT INTO importance.applied (topic, partition, next_offset) VALUES (%s, %s, %s)"
                " ON CONFLICT (topic, partition) DO UPDATE"
                " SET next_offset = greatest(importance.applied.next_offset, excluded.next_offset)",
                (topic, partition, offset),
            )

    async def conservation(self) -> tuple[float, float]:
        """(cash accounted for, total cash): equal up to floating-point error."""
        async with self._db.connection() as conn:
            cur = await conn.execute(CONSERVATION_SQL)
            row = await cur.fetchone()
            assert row is not None
            return float(row[0]), float(row[1])

    def transaction(self) -> Any:
        return self._db.transaction()
