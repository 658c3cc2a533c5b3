"""The shared test fixtures: fresh databases and unique names."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

pytestmark = pytest.mark.integration


def test_fresh_db_is_empty_and_private(fresh_db: str, pg_dsn: str) -> None:
    with psycopg.connect(fresh_db) as conn:
        name = conn.execute("SELECT current_database()").fetchone()
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    with psycopg.connect(pg_dsn) as conn:
        module_name = conn.execute("SELECT current_database()").fetchone()

    assert tables == (0,)
    assert name is not None and module_name is not None and name != module_name


def test_fresh_db_is_dropped_afterwards(pg_admin_dsn: str, fresh_db: str) -> None:
    # The fixture of the previous test must have dropped its database.
    with psycopg.connect(pg_admin_dsn) as conn:
        leftovers = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'db_test_fresh_db_is_empty%'"
        ).fetchall()
    assert leftovers == []


def test_unique_name_is_unique_and_safe(unique_name: Callable[[str], str]) -> None:
    names = {unique_name("topic") for _ in range(100)}

    assert len(names) == 100
    assert all(name.startswith("topic_test_unique_name") and len(name) <= 63 for name in names)
    assert all(name.replace("_", "").isalnum() and name == name.lower() for name in names)
