"""Versioned schema migrations: ``NNNN_name.sql`` files applied once each, in order.

Each service owns one PostgreSQL schema (``scheduler``, ``linkbase``, ...) and keeps its
migrations beside its code. A table ``<schema>.schema_migrations`` records what was
applied; an advisory lock makes concurrent starts safe. Applying twice changes nothing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path


def discover(folder: Path) -> list[Migration]:
    found = []
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name} is not named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"duplicate migration versions in {folder}")
    return found


def apply_migrations(dsn: str, schema: str, folder: Path, connect_timeout: float = 10.0) -> list[int]:
    """Applies the pending migrations of ``folder`` to ``schema``; returns the versions applied."""
    applied_now: list[int] = []
    with psycopg.connect(dsn, autocommit=False, connect_timeout=max(1, round(connect_timeout))) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"trawl-migrate-{schema}",))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {}.schema_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                ).format(sql.Identifier(schema))
            )
            done = {
                row[0]
                for row in conn.execute(
                    sql.SQL("SELECT version FROM {}.schema_migrations").format(sql.Identifier(schema))
                )
            }
            for migration in discover(folder):
                if migration.version in done:
                    continue
                conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema)))
                conn.execute(migration.path.read_text().encode())
                conn.execute(
                    sql.SQL("INSERT INTO {}.schema_migrations (version, name) VALUES (%s, %s)").format(
                        sql.Identifier(schema)
                    ),
                    (migration.version, migration.name),
                )
                applied_now.append(migration.version)
                log.info("applied migration %s/%04d_%s", schema, migration.version, migration.name)
    return applied_now
