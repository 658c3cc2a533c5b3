"""Versioned migrations on the real PostgreSQL: order, idempotence, concurrent starts, bad files."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from libs.common.db.migrations import apply_migrations, discover

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SCHEMA = "shop"


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _applied(dsn: str, schema: str = SCHEMA) -> list[tuple[int, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f"SELECT version, name FROM {schema}.schema_migrations ORDER BY version").fetchall()
    return [(int(v), str(n)) for v, n in rows]


def _columns(dsn: str, table: str, schema: str = SCHEMA) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
            " ORDER BY ordinal_position",
            (schema, table),
        ).fetchall()
    return [str(r[0]) for r in rows]


# Each migration depends on the one before it, so applying them out of order fails.
ORDERED = {
    "0001_items.sql": "CREATE TABLE items (id integer PRIMARY KEY);\nINSERT INTO items VALUES (1), (2);",
    "0002_item_name.sql": "ALTER TABLE items ADD COLUMN name text NOT NULL DEFAULT 'x';",
    "0010_item_price.sql": "ALTER TABLE items ADD COLUMN price numeric;\nUPDATE items SET price = 100 * id;",
}


def test_applies_files_in_order_into_the_schema_and_records_them(fresh_db: str, tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", ORDERED)

    assert apply_migrations(fresh_db, SCHEMA, folder) == [1, 2, 10]

    assert _applied(fresh_db) == [(1, "items"), (2, "item_name"), (10, "item_price")]
    assert _columns(fresh_db, "items") == ["id", "name", "price"]
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("SELECT to_regclass('public.items')").fetchone() == (None,)
        assert conn.execute(f"SELECT sum(price) FROM {SCHEMA}.items").fetchone() == (300,)


def test_a_second_run_applies_nothing_and_a_new_file_applies_alone(fresh_db: str, tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", ORDERED)
    apply_migrations(fresh_db, SCHEMA, folder)

    assert apply_migrations(fresh_db, SCHEMA, folder) == []
    with psycopg.connect(fresh_db) as conn:  # the data migration did not run twice
        assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.items").fetchone() == (2,)

    _write(folder, {"0011_item_stock.sql": "ALTER TABLE items ADD COLUMN stock integer;"})
    assert apply_migrations(fresh_db, SCHEMA, folder) == [11]
    assert _columns(fresh_db, "items")[-1] == "stock"


def test_schemas_are_migrated_independently(fresh_db: str, tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", {"0001_items.sql": ORDERED["0001_items.sql"]})
    assert apply_migrations(fresh_db, "one", folder) == [1]
    assert apply_migrations(fresh_db, "two", folder) == [1]
    assert _applied(fresh_db, "one") == _applied(fresh_db, "two") == [(1, "items")]


def test_concurrent_starts_apply_each_migration_once(fresh_db: str, tmp_path: Path) -> None:
    slow = {
        "0001_items.sql": "SELECT pg_sleep(0.3);\nCREATE TABLE items (id integer PRIMARY KEY);",
        "0002_more.sql": "INSERT INTO items VALUES (1);",
    }
    folder = _write(tmp_path / "migrations", slow)
    results: list[list[int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        try:
            results.append(apply_migrations(fresh_db, SCHEMA, folder))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert sorted(results) == [[], [1, 2]]
    assert _applied(fresh_db) == [(1, "items"), (2, "more")]


def test_a_failing_migration_applies_nothing(fresh_db: str, tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", {
        "0001_items.sql": "CREATE TABLE items (id integer PRIMARY KEY);",
        "0002_broken.sql": "ALTER TABLE no_such_table ADD COLUMN x integer;",
    })
    with pytest.raises(psycopg.errors.UndefinedTable):
        apply_migrations(fresh_db, SCHEMA, folder)
    with psycopg.connect(fresh_db) as conn:  # one transaction: not even the schema was created
        assert conn.execute("SELECT to_regnamespace(%s)", (SCHEMA,)).fetchone() == (None,)

    (folder / "0002_broken.sql").write_text("ALTER TABLE items ADD COLUMN x integer;")
    assert apply_migrations(fresh_db, SCHEMA, folder) == [1, 2]


@pytest.mark.parametrize("bad_name", ["1_items.sql", "0001-items.sql", "0001_Items.sql", "00001_items.sql",
                                      "items.sql"])
def test_a_badly_named_file_is_refused_before_anything_runs(fresh_db: str, tmp_path: Path, bad_name: str) -> None:
    folder = _write(tmp_path / "migrations", {"0001_items.sql": ORDERED["0001_items.sql"], bad_name: "SELECT 1;"})
    with pytest.raises(ValueError, match=bad_name):
        apply_migrations(fresh_db, SCHEMA, folder)
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", (SCHEMA,)).fetchone() == (None,)


def test_duplicate_versions_are_refused(tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", {"0001_a.sql": "", "0001_b.sql": ""})
    with pytest.raises(ValueError, match="duplicate"):
        discover(folder)


def test_discover_orders_by_version(tmp_path: Path) -> None:
    folder = _write(tmp_path / "migrations", {"0010_c.sql": "", "0002_b.sql": "", "0001_a.sql": "",
                                              "README.md": "not a migration"})
    assert [(m.version, m.name) for m in discover(folder)] == [(1, "a"), (2, "b"), (10, "c")]
