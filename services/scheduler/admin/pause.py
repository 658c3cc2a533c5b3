"""The pause flag (``scheduler.state``, key ``paused``): set through the admin API, read by every dispatch round."""

from __future__ import annotations

from libs.common.db.pool import Database


class PauseFlag:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def is_paused(self) -> bool:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT value FROM scheduler.state WHERE key = 'paused'")
            row = await cur.fetchone()
            return bool(row and row[0] == "true")

    async def set_paused(self, paused: bool) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO scheduler.state (key, value) VALUES ('paused', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                ("true" if paused else "false",),
            )
