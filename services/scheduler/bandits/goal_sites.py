"""A crawl goal's sites as the frontier feeds them: one listener of the frontier, and its reads.

The frontier tells it of discoveries and applied outcomes in its own transactions
(``services/scheduler/frontier/listeners.py``); the statistics are kept by :mod:`arm_store`,
only for the registered sites. The dispatcher and the admin API register a goal's sites and
read their states here; the handler credits the pages' external links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.pool import Database
from services.scheduler.bandits import arm_store
from services.scheduler.bandits.allocator import ArmState
from services.scheduler.frontier.listeners import AppliedOutcomes


class GoalSites:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def discovered(self, conn: AsyncConnection[Any], found: Mapping[int, tuple[str, int]]) -> None:
        await arm_store.credit_discoveries(conn, found)

    async def outcomes_applied(self, conn: AsyncConnection[Any], applied: AppliedOutcomes) -> None:
        await arm_store.record_pulls(conn, [(e.url_fp, e.host, e.fetched) for e in applied.ended])

    async def register(self, sites: Sequence[str]) -> None:
        """Makes ``sites`` arms of the crawl goal: their pages are recorded from now on."""
        async with self._db.transaction() as conn:
            await arm_store.register_sites(conn, sites)

    async def credit_link_counts(self, external: Mapping[int, tuple[str, int]]) -> None:
        """Credits pages of the goal's sites with their external links (page fp -> (host, links))."""
        async with self._db.transaction() as conn:
            await arm_store.credit_link_counts(conn, external)

    async def states(self, sites: Sequence[str], goal: str, recent: int) -> list[ArmState]:
        async with self._db.connection() as conn:
            return await arm_store.arm_states(conn, sites, goal, recent)
