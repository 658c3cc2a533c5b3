"""Database settings shared by every service that owns PostgreSQL state."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import REQUIRED, setting


@dataclass(frozen=True)
class DatabaseSettings:
    dsn: str = setting("TRAWL_DATABASE_URL", REQUIRED, "libpq connection string of the PostgreSQL database.")
    pool_min: int = setting("TRAWL_DATABASE_POOL_MIN", 1, "Connections kept open.")
    pool_max: int = setting("TRAWL_DATABASE_POOL_MAX", 8, "Most connections a service opens.")
    connect_timeout: float = setting(
        "TRAWL_DATABASE_CONNECT_TIMEOUT", 10.0, "Seconds to wait for a connection before the attempt fails."
    )
