"""Fixtures of the linkbase integration tests: a migrated database and an open pool."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from services.linkbase.main import MIGRATIONS


@pytest.fixture
async def linkbase_db(fresh_db: str) -> AsyncIterator[Database]:
    """A started pool on a fresh database with the linkbase schema applied."""
    apply_migrations(fresh_db, "linkbase", MIGRATIONS)
    db = Database(DatabaseSettings(dsn=fresh_db), "linkbase-test")
    await db.start()
    try:
        yield db
    finally:
        await db.stop()
