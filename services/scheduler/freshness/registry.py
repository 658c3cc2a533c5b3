"""The model generation a replica plans with: the current one in the database, reloaded when it changes.

Every ``poll_seconds`` (real time) the registry reads which generation is current and loads it
when it is new; the trainer also hands a generation it just wrote straight to its own
replica. Planning never waits for the database: it uses what is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from libs.common import metrics
from services.scheduler.freshness.keys import is_host_key
from services.scheduler.freshness.store import Generation, GenerationStore

log = logging.getLogger(__name__)


class ModelRegistry:
    def __init__(self, store: GenerationStore, poll_seconds: float) -> None:
        self._store = store
        self._poll = poll_seconds
        self.current: Generation | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        metrics.declare_freshness()

    async def start(self) -> None:
        self._stopping.clear()
        await self.refresh()
        self._task = asyncio.create_task(self._run(), name="freshness-models")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def use(self, generation: Generation) -> None:
        """Plans with ``generation`` from now on (a newer one only)."""
        if self.current is None or generation.generation > self.current.generation:
            self.current = generation
            models = generation.models
            metrics.FRESHNESS_MODELS.labels("host").set(sum(1 for k in models if is_host_key(k)))
            metrics.FRESHNESS_MODELS.labels("path").set(sum(1 for k in models if not is_host_key(k)))
            log.info("freshness models: generation %s, %s models, %s keys routed", generation.generation,
                     len(models), len(generation.routes))

    async def refresh(self) -> None:
        current = await self._store.current_id()
        if current is None or (self.current is not None and self.current.generation >= current):
            return
        generation = await self._store.load(current)
        if generation is not None:
            self.use(generation)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self._poll)
            if self._stopping.is_set():
                return
            try:
                await self.refresh()
            except Exception as exc:  # the database is away: plan with what is loaded, try again later
                log.warning("could not refresh the freshness models: %s", exc)
