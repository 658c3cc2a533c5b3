"""Samples the frontier into Prometheus gauges, and names the host of a request that seems stuck.

Every ``interval`` seconds: URLs by status (``trawl_frontier_urls``), hosts with a request
out and the age of the oldest request still waiting for its outcome. When that age passes
half the lease, the request's URL and host are logged (JSON fields ``url`` and ``host``):
the fetcher that owns the host's partition is slow or stuck, and the lease will send the
URL out again. Counting by status reads the whole frontier; in-flight figures read only
the in-flight index. Every status reads 0 until it is counted, and once it empties.
"""

from __future__ import annotations

import asyncio
import logging

from libs.common import metrics
from libs.common.db.pool import Database

log = logging.getLogger(__name__)

BY_STATUS = "SELECT status, count(*) FROM scheduler.frontier GROUP BY status"
STATUSES = ("queued", "in_flight", "fetched", "failed", "blocked")  # exported at 0 until counted
IN_FLIGHT = (
    "SELECT count(DISTINCT host), extract(epoch FROM now() - min(dispatched_at))"
    " FROM scheduler.frontier WHERE status = 'in_flight'"
)
OLDEST = (
    "SELECT url, host FROM scheduler.frontier WHERE status = 'in_flight' ORDER BY dispatched_at LIMIT 1"
)


class FrontierMetrics:
    def __init__(self, db: Database, lease_seconds: float, interval: float = 30.0) -> None:
        self._db = db
        self._lease = lease_seconds
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._known: set[str] = set(STATUSES)
        for status in STATUSES:
            metrics.FRONTIER_URLS.labels(status).set(0)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="scheduler-frontier-metrics")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.sample()
            except Exception as exc:  # metrics must never stop the scheduler
                log.warning("sampling the frontier failed: %s", exc)
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=self._interval)
            except TimeoutError:
                pass

    async def sample(self) -> None:
        async with self._db.connection() as conn:
            counts = {str(s): int(n) for s, n in await (await conn.execute(BY_STATUS)).fetchall()}
            row = await (await conn.execute(IN_FLIGHT)).fetchone()
            hosts, age = (int(row[0]), float(row[1] or 0.0)) if row else (0, 0.0)
            oldest = await (await conn.execute(OLDEST)).fetchone() if age > self._lease / 2 else None
        for status in self._known - set(counts):
            metrics.FRONTIER_URLS.labels(status).set(0)
        self._known |= set(counts)
        for status, count in counts.items():
            metrics.FRONTIER_URLS.labels(status).set(count)
        metrics.HOSTS_IN_FLIGHT.set(hosts)
        metrics.OLDEST_IN_FLIGHT_SECONDS.set(age)
        if oldest is not None:
            log.warning("a fetch request has waited %.0fs for its outcome (lease %.0fs)", age, self._lease,
                        extra={"url": oldest[0], "host": oldest[1]})
