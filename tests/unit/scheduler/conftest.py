"""Fixtures of the scheduler hook tests that need the real database: a migrated schema and its frontier."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.topics import FETCH_REQUESTS
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.store import FrontierStore

MIGRATIONS = Path(__file__).resolve().parents[3] / "services" / "scheduler" / "migrations"


@pytest.fixture
async def scheduler_db(fresh_db: str) -> AsyncIterator[Database]:
    apply_migrations(fresh_db, "scheduler", MIGRATIONS)
    db = Database(DatabaseSettings(dsn=fresh_db), "scheduler-hooks-test")
    await db.start()
    try:
        yield db
    finally:
        await db.stop()


@pytest.fixture
def goal_sites(scheduler_db: Database) -> GoalSites:
    return GoalSites(scheduler_db)


@pytest.fixture
def frontier(scheduler_db: Database, goal_sites: GoalSites) -> FrontierStore:
    return FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, listeners=[goal_sites])
