"""The crawl goal in force: the settings' (``TRAWL_SCHEDULER_BANDIT_*``), unless the admin API set one.

A goal set through the admin API is stored in ``scheduler.state`` (key ``crawl_goal``, JSON),
so every scheduler replica's dispatcher picks it up at its next round (:class:`LiveGoal`
reads the key each round and rebuilds the allocator only when it changed), and it outlives
restarts. Resetting it deletes the key: the settings' goal applies again. A stored goal with
an empty policy means "no goal", whatever the settings say.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass

from libs.common.db.pool import Database
from libs.common.settings import SettingsError
from services.scheduler.bandits.allocator import BanditAllocator, allocator_from_settings
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

STATE_KEY = "crawl_goal"


@dataclass(frozen=True)
class GoalSpec:
    policy: str = ""
    goal: str = "documents"
    sites: tuple[str, ...] = ()
    budget: int = 0
    step: int = 10
    parallel: int = 4

    @classmethod
    def from_settings(cls, settings: SchedulerSettings) -> GoalSpec:
        return cls(
            settings.bandit_policy, settings.bandit_goal, tuple(settings.bandit_sites), settings.bandit_budget,
            settings.bandit_step, settings.bandit_parallel,
        )

    @classmethod
    def from_json(cls, text: str) -> GoalSpec:
        raw = json.loads(text)
        return cls(
            str(raw.get("policy", "")), str(raw.get("goal", "documents")), tuple(str(s) for s in raw.get("sites", ())),
            int(raw.get("budget", 0)), int(raw.get("step", 10)), int(raw.get("parallel", 4)),
        )

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "sites": list(self.sites)}, sort_keys=True)

    def allocator(self) -> BanditAllocator | None:
        """The allocator of this goal (None: no goal); raises SettingsError when it is not valid."""
        if self.budget < 0 or self.step < 1 or self.parallel < 1:
            raise SettingsError("a crawl goal needs budget >= 0, step >= 1 and parallel >= 1")
        return allocator_from_settings(self.policy, self.sites, self.goal, self.budget, self.step, self.parallel)


class GoalStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def stored(self) -> str | None:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT value FROM scheduler.state WHERE key = %s", (STATE_KEY,))
            row = await cur.fetchone()
            return str(row[0]) if row else None

    async def store(self, spec: GoalSpec) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO scheduler.state (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (STATE_KEY, spec.to_json()),
            )

    async def reset(self) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM scheduler.state WHERE key = %s", (STATE_KEY,))


class LiveGoal:
    """The goal's allocator for this round; registers a new goal's sites before it is used."""

    def __init__(self, goals: GoalStore, sites: GoalSites, settings: SchedulerSettings) -> None:
        self._goals = goals
        self._sites = sites
        self._default = GoalSpec.from_settings(settings)
        self._stored: str | None = None
        self._allocator: BanditAllocator | None = None
        self._built = False

    async def spec(self) -> tuple[GoalSpec, str]:
        """The goal in force and where it comes from ("admin" or "settings")."""
        stored = await self._goals.stored()
        if stored is None:
            return self._default, "settings"
        return GoalSpec.from_json(stored), "admin"

    async def current(self) -> BanditAllocator | None:
        stored = await self._goals.stored()
        if self._built and stored == self._stored:
            return self._allocator
        spec = self._default
        if stored is not None:
            try:
                spec = GoalSpec.from_json(stored)
                spec.allocator()
            except (ValueError, SettingsError) as exc:
                log.error("the stored crawl goal is not valid (%s); the settings' goal applies", exc)
                spec = self._default
        allocator = spec.allocator()
        if allocator is not None:
            await self._sites.register(allocator.sites)
        self._stored, self._allocator, self._built = stored, allocator, True
        log.info("crawl goal in force: %s", spec.to_json() if allocator else "none")
        return allocator
