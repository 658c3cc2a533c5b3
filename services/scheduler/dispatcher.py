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

The admin API changes both at run time: a goal it sets replaces the settings' one
(``bandits/goal.py``, ``LiveGoal``), and operator policies per host (``frontier/host_policies.py``) hold hosts,
space their requests, and split hosts by path, read once a round.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from libs.common.kafka.producer import TopicProducer
from libs.common.topics import FETCH_REQUESTS
from libs.common.wire import messages as pb
from services.scheduler.admin.pause import PauseFlag
from services.scheduler.bandits.allocator import RECENT_PAGES, BanditAllocator, allocator_from_settings
from services.scheduler.bandits.goal import LiveGoal
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.host_policies import HostPolicyStore, PolicyRules
from services.scheduler.frontier.store import Dispatched, FrontierStore
from services.scheduler.recovery.unsent_requests import UnsentRequests
from services.scheduler.sent_urls import SentUrls
from services.scheduler.settings import SchedulerSettings
from services.scheduler.site_partition.keying import LargeHostKeys

log = logging.getLogger(__name__)
# How often the in-flight budget counts the frontier's requests in flight; between counts the store
# keeps the count from its own rounds and outcomes (counting reads up to max_in_flight index entries).
IN_FLIGHT_RECOUNT_SECONDS = 1.0


class Dispatcher:
    def __init__(
        self,
        store: FrontierStore,
        producer: TopicProducer,
        settings: SchedulerSettings,
        owned_partitions: Callable[[], set[int]],
        goal_sites: GoalSites,
        pause: PauseFlag,
        policies: HostPolicyStore | None = None,
        goal: LiveGoal | None = None,
        unsent: UnsentRequests | None = None,
        sent: SentUrls | None = None,
    ) -> None:
        self._store = store
        self._goal_sites = goal_sites
        self._pause = pause
        self._sent = sent
        self._unsent = unsent
        self._policies = policies
        self._goal = goal
        self._slot_groups: dict[str, int] | None = None
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
        self._unsent_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self.dispatched = 0
        self._short = False  # the last round took fewer URLs than it had room for
        self._held: Sequence[str] | None = ()  # the hosts the operator holds as of the last round; None: paused
        self.rounds = 0

    async def prepare(self) -> None:
        """Applies the settings to the tables: the crawl goal's sites, the large hosts' slots."""
        if self._allocator is not None:
            await self._goal_sites.register(self._allocator.sites)
        await self._store.set_host_slots(sorted(self._keys.hosts), self._keys.groups)
        self._slot_groups = None  # the policies' large hosts get their slots back at the next round

    async def start(self) -> None:
        await self.prepare()
        self._task = asyncio.create_task(self._run(), name="scheduler-dispatch")
        if self._unsent is not None and self._unsent.age > 0:
            self._unsent_task = asyncio.create_task(self._requeue_unsent(self._unsent), name="scheduler-unsent")

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        tasks = [t for t in (self._task, self._unsent_task) if t is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _requeue_unsent(self, unsent: UnsentRequests) -> None:
        """Every ``unsent.age`` seconds, queues again the requests in flight that never reached the topic."""
        while not self._stopping.is_set():
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=unsent.age)
            except TimeoutError:
                pass
            if self._stopping.is_set():
                return
            try:
                if await unsent.requeue(sorted(self._owned())):
                    self.wake()
            except Exception:
                log.exception("looking for requests that were never sent failed; retrying")

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        last_lease_check = 0.0
        while not self._stopping.is_set():
            self._wake.clear()  # a change from now on (an outcome, new URLs) wakes the next round
            lease_every = min(5.0, self._settings.lease_seconds / 4)
            try:
                if time.monotonic() - last_lease_check > lease_every:
                    expired = await self._store.expire_leases(self._settings.lease_seconds)
                    if expired:
                        log.warning("%s in-flight requests expired and were queued again", expired)
                    last_lease_check = time.monotonic()
                if await self.dispatch_once() and not self._short:
                    continue  # there may be more ready than the round had room for
            except Exception:
                log.exception("dispatch round failed; retrying")
                await self._sleep(1.0)
                continue
            # Nothing more is ready until something changes (that wakes the loop) or time passes. A busy
            # crawl's outcomes wake it within the dispatch interval, as ever; past that, it sleeps until the
            # first URL may be ready rather than run rounds that find nothing.
            if await self._sleep(self._settings.dispatch_interval) or self._stopping.is_set():
                continue
            try:
                await self._sleep(await self._idle_wait(last_lease_check + lease_every - time.monotonic()))
            except Exception:
                log.exception("reading when the next URL is due failed; retrying")

    async def _sleep(self, seconds: float) -> bool:
        """Waits up to ``seconds`` for a wake; True when woken."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            return False
        return True

    async def _idle_wait(self, lease_check_in: float) -> float:
        """Seconds to sleep on, a dispatch interval after a round that took all that was ready: until the next
        URL may be ready or the leases are checked, in all at most ``dispatch_idle_max``."""
        longest = min(self._settings.dispatch_idle_max - self._settings.dispatch_interval, lease_check_in)
        if self._held is None:  # paused: resuming wakes the loop
            return longest
        due = await self._store.seconds_until_due(sorted(self._owned()), self._held)
        return longest if due is None else min(due, longest)

    async def dispatch_once(self) -> int:
        self.rounds += 1
        if await self._pause.is_paused():
            self._held = None
            return 0
        rules = await self._policy_rules()
        # The operator's held hosts stay held until a policy changes (which wakes the loop); the goal's
        # are chosen again each round, so their hosts' times count when the loop looks for the next.
        self._held = rules.held
        out = await self._store.in_flight_recent(IN_FLIGHT_RECOUNT_SECONDS)
        room = min(self._settings.dispatch_batch, self._settings.max_in_flight - out)
        held = [*await self._held_goal_sites(), *rules.held]
        rows = await self._store.dispatch(room, sorted(self._owned()), held)
        self._short = len(rows) < room  # every free host with a ready URL took one
        if not rows:
            return 0
        await self._keys.refresh(self._store.queued_path_counts)
        now_ms = int(time.time() * 1000)
        for row in rows:
            if self._sent is not None:
                self._sent.sent(row.url, row.host, row.url_fp)
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
                    min_delay_seconds=rules.delays.get(row.host, 0.0),
                    etag=row.etag or "",  # a revisit's validators: the fetcher asks conditionally
                    last_modified=row.last_modified or "",
                    validated_at_ms=int(row.validated_at.timestamp() * 1000) if row.validated_at else 0,
                    host_not_before_ms=_not_before_ms(row, now_ms),
                ),
            )
        await self._producer.flush()
        if self._policies is not None:
            await self._policies.space_starts([r.host for r in rows if r.host in rules.delays])
        self.dispatched += len(rows)
        return len(rows)

    async def _policy_rules(self) -> PolicyRules:
        """The operator's host policies for this round; partitioned hosts get their slots and keys."""
        if self._policies is None:
            return PolicyRules()
        rules = await self._policies.rules()
        groups = dict(rules.groups)
        if groups != self._slot_groups:
            await self._policies.apply_slots(groups, {h: self._keys.groups for h in self._keys.hosts})
            self._keys.set_policy_groups(groups)
            self._slot_groups = groups
        return rules

    async def _held_goal_sites(self) -> list[str]:
        """The crawl goal's sites its policy does not choose this round (none without a goal)."""
        allocator: BanditAllocator | None = self._allocator if self._goal is None else await self._goal.current()
        if allocator is None:
            return []
        states = await self._goal_sites.states(allocator.sites, allocator.goal, RECENT_PAGES)
        return allocator.held(states)


def _not_before_ms(row: Dispatched, now_ms: int) -> int:
    """The host's next allowed time (Unix ms) for a request taken ahead of it, else 0.

    The fetcher that owns the host's partition holds such a request until then; a fetcher that has
    just taken the partition over knows nothing of the host's last fetch but this.
    """
    if row.host_not_before is None:
        return 0
    at_ms = int(row.host_not_before.timestamp() * 1000)
    return at_ms if at_ms > now_ms else 0
