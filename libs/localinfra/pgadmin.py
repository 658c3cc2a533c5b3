"""Small administrative operations on a PostgreSQL server reached by DSN.

Used by the local server manager and by the test fixtures, which also work
against an existing server named by a configured DSN.
"""

from __future__ import annotations

import logging
import re
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from libs.localinfra.errors import LocalInfraError

logger = logging.getLogger(__name__)

_DB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,62}$")


def dsn_with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at ``database`` instead, keeping its form (URL or key=value)."""
    if dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(dsn)
        return urlunsplit(parts._replace(path="/" + database))
    return make_conninfo(dsn, dbname=database)


def wait_connectable(dsn: str, timeout: float) -> None:
    """Block until a session can be opened on ``dsn`` and answer ``SELECT 1``."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(dsn, connect_timeout=2, autocommit=True) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError as exc:
            last = exc
            time.sleep(0.05)
    raise LocalInfraError(f"PostgreSQL at {dsn} not reachable within {timeout:.0f}s: {last}")


def create_database(admin_dsn: str, name: str) -> bool:
    """Create database ``name`` unless it exists; True when it was created."""
    _check_name(name)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return False
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except errors.DuplicateDatabase:
            return False
        except errors.UniqueViolation:
            # Two concurrent creators: the loser sees the catalog's unique index.
            return False
    logger.info("created database %s", name)
    return True


def drop_database(admin_dsn: str, name: str) -> None:
    """Drop database ``name`` if it exists, disconnecting its sessions."""
    _check_name(name)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _check_name(name: str) -> None:
    if not _DB_NAME.match(name):
        raise ValueError(f"unsuitable database name {name!r}: use letters, digits, _ or -, at most 63")
