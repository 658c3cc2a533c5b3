"""Fixtures of the scheduler integration tests: a migrated database and a frontier store on it."""

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


@pytest.fixture
async def scheduler_db(fresh_db: str) -> AsyncIterator[Database]:
    """A started pool on a fresh database with the scheduler schema applied."""
    apply_migrations(fresh_db, "scheduler", Path("services/scheduler/migrations"))
    db = Database(DatabaseSettings(dsn=fresh_db), "scheduler-test")
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
    """The frontier, hosts spread over as many partitions as fetch requests have."""
    return FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, listeners=[goal_sites])
