"""Hosts changing fetcher: politeness across Kafka rebalances.

Fetch requests are keyed by host, so the fetcher owning a partition owns its
hosts; the scheduler keeps one request per host in flight and dispatches a host
only after the next allowed time reported with its last outcome. What a
rebalance (scale up, scale down, a crash) adds is a request that two fetchers
may see: one delivered to the old owner and, uncommitted, again to the new one.
Two rules keep "one request at a time, and the gap" across owners:

1. **A fetcher gives a partition up settled** (:meth:`Handoff.revoking`, run
   inside the rebalance before the partition is released, and on stop).
   Requests still waiting for their host end at once and are handed on: sent
   again to the same partition (same key, same request id) stamped with the
   host's next allowed time, ``host_not_before_ms``, so that backoffs and
   Retry-After survive the move. Requests on the wire get ``grace`` seconds to
   finish (their outcome is published as usual) and are then cut short and
   handed on the same way. Then the producer is flushed, and the consumer
   commits: every request it received is done, so none is delivered again
   and nothing of the partition is in flight here once it is released.

2. **A new owner cannot tell which earlier requests a dead owner had started**
   (a crash commits nothing), so a request produced before its partition was
   assigned here is *inherited*: its host is held until ``handoff_delay``
   seconds after the assignment, as if it had been fetched at that moment.
   A partition the group never committed an offset for had no owner that
   finished a request of it (a fetcher commits what it finished every
   ``TRAWL_FETCHER_COMMIT_INTERVAL``): its requests are not inherited, so a
   crawl's first fetcher starts at once instead of ``handoff_delay`` late.
   Any request the old owner sent ended before the assignment (a crashed
   process's connections die with it; a live one settles first), so the gap
   holds for hosts whose gap is at most ``handoff_delay`` (by default the
   largest Crawl-delay honoured); a stamp from rule 1 may hold it longer.
   Requests produced after the assignment come from the scheduler, which
   dispatched them after the host's last outcome, and, when it hands one out
   ahead of the host's next allowed time (``TRAWL_SCHEDULER_DISPATCH_AHEAD_SECONDS``),
   stamps it with that time in ``host_not_before_ms``: the host is held until then
   here too, though this fetcher never saw the fetch that set it.

Partitions are identified by number (the fetcher consumes one topic).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from libs.common.kafka.consumer import Record
from services.fetcher.clock import Clock, from_unix_ms, to_unix_ms
from services.fetcher.fetch_core import FetchCore
from services.fetcher.partitions.finished_requests import FinishedRequests

logger = logging.getLogger(__name__)

__all__ = ["CLOCK_SKEW_MS", "Handoff"]

CLOCK_SKEW_MS = 2000
"""How far the scheduler's clock (record timestamps) may run ahead of the fetcher's (NTP keeps far less)."""


@dataclass
class _Partition:
    assigned_at_ms: int
    assigned_at: float  # on the fetcher's clock
    inherits: bool = True  # an earlier owner may have started its requests
    leaving: bool = False
    jobs: dict[asyncio.Task[Any], str] = field(default_factory=dict)  # task -> host


class Handoff:
    """Partition ownership seen from the fetch worker: admits requests, settles revoked partitions.

    ``flush`` makes everything produced so far durable (the producer's flush).
    ``wall`` is Unix time in seconds (record timestamps are compared with it).
    """

    def __init__(
        self,
        core: FetchCore,
        clock: Clock,
        flush: Callable[[], Awaitable[None]],
        *,
        handoff_delay: float,
        grace: float,
        settle_timeout: float = 30.0,
        wall: Callable[[], float] = time.time,
        finished: FinishedRequests | None = None,
    ) -> None:
        self._core = core
        self._finished = finished
        self._clock = clock
        self._flush = flush
        self._handoff_delay = handoff_delay
        self._grace = grace
        self._settle_timeout = settle_timeout
        self._wall = wall
        self._lock = threading.Lock()
        self._partitions: dict[int, _Partition] = {}
        self.handed_on = 0
        self.inherited = 0

    # called in the consumer's thread ---------------------------------------------------------

    def assigned(self, partitions: list[tuple[str, int]], first: frozenset[tuple[str, int]] = frozenset()) -> None:
        """``partitions`` are served here from now; ``first``: those no earlier owner finished anything of."""
        at_ms, at = int(self._wall() * 1000), self._clock.now()
        with self._lock:
            for topic, number in partitions:
                self._partitions[number] = _Partition(at_ms, at, inherits=(topic, number) not in first)
        logger.info("took over partitions %s (%d never served before)", sorted(n for _, n in partitions),
                    len(first))

    # called on the event loop ----------------------------------------------------------------

    async def finished_before(self, record: Record[Any]) -> bool:
        """Whether ``record`` is an inherited request its partition's previous owner already finished."""
        if self._finished is None:
            return False
        with self._lock:
            part = self._partitions.get(record.partition)
        if (part is None or part.leaving or not part.inherits
                or record.timestamp_ms > part.assigned_at_ms + CLOCK_SKEW_MS):
            return False
        return await self._finished.finished(record.partition, part.assigned_at_ms, record.value.request_id,
                                             record.timestamp_ms)

    async def admit(self, record: Record[Any]) -> bool:
        """Start serving ``record``'s request: False if its partition is not (or no longer) owned here.

        Holds the host for an inherited request or a stamped one, then counts
        the request in hand until :meth:`finish`.
        """
        request = record.value
        key = await self._core.politeness_key(request.host)
        with self._lock:
            part = self._partitions.get(record.partition)
        task = asyncio.current_task()
        if part is None or part.leaving or task is None:
            return False
        part.jobs[task] = request.host
        not_before: float | None = None
        last_fetch_end: float | None = None
        if part.inherits and record.timestamp_ms <= part.assigned_at_ms + CLOCK_SKEW_MS:
            self.inherited += 1
            not_before, last_fetch_end = part.assigned_at + self._handoff_delay, part.assigned_at
        stamp = int(request.host_not_before_ms)
        if stamp > 0:
            stamped = from_unix_ms(self._clock, stamp, self._wall)
            not_before = stamped if not_before is None else max(not_before, stamped)
        self._core.take_key(key, not_before, last_fetch_end)
        return True

    def finish(self, record: Record[Any]) -> None:
        """The request of ``record`` is no longer in hand."""
        task = asyncio.current_task()
        part = self._partitions.get(record.partition)
        if part is not None and task is not None:
            part.jobs.pop(task, None)

    async def revoking(self, partitions: list[tuple[str, int]]) -> None:
        """Settle ``partitions`` before they are given up (see the module docstring, rule 1)."""
        with self._lock:
            leaving = {n: p for _, n in partitions if (p := self._partitions.get(n)) is not None}
            for part in leaving.values():
                part.leaving = True
            kept_hosts = {h for n, p in self._partitions.items() if n not in leaving for h in p.jobs.values()}
        jobs = {task: host for part in leaving.values() for task, host in part.jobs.items()}
        if jobs:
            hosts = sorted(set(jobs.values()) - kept_hosts)
            logger.info("handing over partitions %s: %d requests in hand", sorted(leaving), len(jobs))
            await self._core.release_hosts(hosts, self._grace)
            _done, pending = await asyncio.wait(set(jobs), timeout=self._settle_timeout)
            if pending:
                logger.warning("%d requests of revoked partitions did not settle; they will be delivered again",
                               len(pending))
        try:
            await self._flush()
        except Exception:
            logger.exception("flush before giving partitions up failed; their requests will be delivered again")
        with self._lock:
            for number in leaving:
                self._partitions.pop(number, None)

    def stamp_ms(self, host: str) -> int:
        """The host's next allowed time as Unix milliseconds, for a request handed on."""
        return to_unix_ms(self._clock, max(self._clock.now(), self._core.next_allowed_at(host)), self._wall)
