"""The dispatch loop: turns the frontier into fetch requests, keyed by host.

Each round takes, for every free host among the partitions this replica owns, its
highest-priority ready URL, best first, as many as the in-flight budget allows
(``max_in_flight`` minus what is already out: backpressure from fetch outcomes). A host
has at most one request in flight; the next one waits for its outcome. Requests whose
outcome never comes (a fetcher died) are queued again when their lease expires.

Two settings shape a round without changing it otherwise: a crawl goal
(``TRAWL_SCHEDULER_BANDIT_POLICY``) holds back the goal's sites its policy does not choose
this round (``bandits/allocator.py``), and a large host (``TRAWL_SCHEDULER_LARGE_HOSTS``)
has its requests keyed ``host#group`` by path (``site_partition/keying.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from libs.common.kafka.producer import TopicProducer
from libs.common.topics import FETCH_REQUESTS
from libs.common.wire import messages as pb
from services.scheduler.bandits.allocator import RECENT_PAGES, allocator_from_settings
from services.scheduler.frontier_store import FrontierStore
from services.scheduler.settings import SchedulerSettings
from services.scheduler.site_partition.keying import LargeHostKeys

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        store: FrontierStore,
        producer: TopicProducer,
        settings: SchedulerSettings,
        owned_partitions: Callable[[], set[int]],
    ) -> None:
        self._store = store
        self._producer = producer
        self._settings = settings
        self._owned = owned_partitions
        self._allocator = allocator_from_settings(
            settings.bandit_policy,
            settings.bandit_sites,
            settings.bandit_goal,
            settings.bandit_budget,
            settings.bandit_step,
            settings.bandit_parallel,
        )
        self._keys = LargeHostKeys(settings.large_hosts, settings.large_host_groups, settings.partition_refresh_seconds)
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self.dispatched = 0

    async def prepare(self) -> None:
        """Applies the settings to the tables: the crawl goal's sites, the large hosts' slots."""
        if self._allocator is not None:
            await self._store.register_goal_sites(self._allocator.sites)
        await self._store.set_host_slots(sorted(self._keys.hosts), self._keys.groups)

    async def start(self) -> None:
        await self.prepare()
        self._task = asyncio.create_task(self._run(), name="scheduler-dispatch")

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        last_lease_check = 0.0
        while not self._stopping.is_set():
            try:
                if time.monotonic() - last_lease_check > min(5.0, self._settings.lease_seconds / 4):
                    expired = await self._store.expire_leases(self._settings.lease_seconds)
                    if expired:
                        log.warning("%s in-flight requests expired and were queued again", expired)
                    last_lease_check = time.monotonic()
                sent = await self.dispatch_once()
            except Exception:
                log.exception("dispatch round failed; retrying")
                sent = 0
                await asyncio.sleep(1.0)
            if sent == 0:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=self._settings.dispatch_interval)
                except TimeoutError:
                    pass

    async def dispatch_once(self) -> int:
        if await self._store.is_paused():
            return 0
        room = min(self._settings.dispatch_batch, self._settings.max_in_flight - await self._store.in_flight())
        rows = await self._store.dispatch(room, sorted(self._owned()), await self._held_goal_sites())
        if not rows:
            return 0
        await self._keys.refresh(self._store.queued_path_counts)
        now_ms = int(time.time() * 1000)
        for row in rows:
            self._producer.send(
                FETCH_REQUESTS,
                self._keys.key_for(row.host, row.url),
                pb.FetchRequest(
                    request_id=row.request_id,
                    url=row.url,
                    host=row.host,
                    priority=row.priority,
                    attempt=row.attempts,
                    depth=row.depth,
                    scheduled_at_ms=now_ms,
                ),
            )
        await self._producer.flush()
        self.dispatched += len(rows)
        return len(rows)

    async def _held_goal_sites(self) -> list[str]:
        """The crawl goal's sites its policy does not choose this round (none without a goal)."""
        if self._allocator is None:
            return []
        states = await self._store.goal_site_states(self._allocator.sites, self._allocator.goal, RECENT_PAGES)
        return self._allocator.held(states)
