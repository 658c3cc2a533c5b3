"""A started/stopped async connection pool.

When the server goes away, ``connection()`` raises ``psycopg.OperationalError``; the
consumers treat that as transient and retry, and the pool reconnects on its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from libs.common.db.settings import DatabaseSettings

log = logging.getLogger(__name__)


class Database:
    def __init__(self, settings: DatabaseSettings, name: str) -> None:
        self._settings = settings
        self._pool = AsyncConnectionPool(
            settings.dsn,
            min_size=settings.pool_min,
            max_size=settings.pool_max,
            timeout=settings.connect_timeout,
            kwargs={"application_name": f"trawl-{name}", "autocommit": False},
            open=False,
            name=name,
            reconnect_timeout=3600.0,
        )

    async def start(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=self._settings.connect_timeout * 3)
        except BaseException:
            await self._pool.close()  # no pool left behind retrying in the background
            raise

    async def stop(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        async with self._pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection inside one transaction, committed on success."""
        async with self._pool.connection() as conn, conn.transaction():
            yield conn
