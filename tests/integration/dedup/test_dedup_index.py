"""The exact-fingerprint index on the real PostgreSQL server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from libs.common.db.migrations import apply_migrations, discover
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from services.dedup.index import Claim, FingerprintIndex
from services.dedup.main import MIGRATIONS
from services.dedup.store import ExactFingerprintIndex

pytestmark = pytest.mark.integration


@pytest.fixture
async def index(fresh_db: str) -> AsyncIterator[FingerprintIndex]:
    apply_migrations(fresh_db, "dedup", MIGRATIONS)
    db = Database(DatabaseSettings(dsn=fresh_db), "dedup-test")
    await db.start()
    try:
        yield ExactFingerprintIndex(db)
    finally:
        await db.stop()


def test_migrations_apply_to_an_empty_database_and_are_idempotent(fresh_db: str) -> None:
    assert apply_migrations(fresh_db, "dedup", MIGRATIONS) == [m.version for m in discover(MIGRATIONS)]
    assert apply_migrations(fresh_db, "dedup", MIGRATIONS) == []


async def test_the_first_url_owns_its_content(index: FingerprintIndex) -> None:
    a, b, c = "http://a.test/", "http://b.test/", "http://c.test/"
    assert await index.claim([Claim(a, "x"), Claim(b, "x"), Claim(c, "y")]) == {a: a, b: a, c: c}
    assert await index.claim([Claim(b, "x"), Claim(a, "x")]) == {a: a, b: a}
    assert await index.claim([Claim(c, "x")]) == {c: a}
    assert await index.claim([]) == {}
