"""The discovery outbox: announces pending URLs on trawl.discovered-urls exactly once.

Writers only move a followable URL to ``announce_state = 1`` inside their transaction.
This publisher then, in its own transaction, locks a chunk of pending URLs (``SKIP
LOCKED``, so replicas never announce the same rows), sends one ``DiscoveredUrl`` per URL
keyed by host, waits until the broker acknowledged them (flush) and only then sets
``announce_state = 2``. A redelivered page finds its targets already announced; a crash
after commit leaves them pending and the next run (at start, on a timer, and after every
consumed batch) announces them. Only a crash between the flush and the commit of a chunk
can announce URLs twice.

Each announcement carries the URL's path and that path's trap penalty
(:mod:`services.linkbase.trap_signal`); the start URL of a registered seed site is announced
as a seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from libs.common import metrics
from libs.common.db.pool import Database
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DISCOVERED_URLS
from libs.common.url_keys import normalized_host, trap_path_key
from libs.common.wire import messages as pb
from services.linkbase.trap_signal import TrapPolicy, path_penalties

log = logging.getLogger(__name__)

_SELECT_PENDING = """
SELECT u.host_id, u.url_fp, u.url, h.host, u.depth, src.url, (extract(epoch FROM u.first_seen) * 1000)::bigint,
       s.host_id IS NOT NULL, u.discovered_occurrences
FROM linkbase.urls AS u
LEFT JOIN linkbase.hosts AS h ON h.host_id = u.host_id
LEFT JOIN linkbase.urls AS src ON src.host_id = u.discovered_from_host_id AND src.url_fp = u.discovered_from_fp
LEFT JOIN linkbase.seeds AS s ON s.host_id = u.host_id AND s.start_url = u.url
WHERE u.announce_state = 1
ORDER BY u.url_fp
LIMIT %s
FOR UPDATE OF u SKIP LOCKED
"""

_MARK_ANNOUNCED = """
UPDATE linkbase.urls AS u SET announce_state = 2
FROM unnest(%s::bigint[], %s::bigint[]) AS k(host_id, url_fp)
WHERE u.host_id = k.host_id AND u.url_fp = k.url_fp AND u.announce_state = 1
"""


class DiscoveryPublisher:
    """Publishes pending discoveries: on demand (:meth:`publish_pending`) and every ``interval`` seconds."""

    def __init__(
        self, db: Database, producer: TopicProducer, *, interval: float, chunk: int, traps: TrapPolicy
    ) -> None:
        self._db = db
        self._producer = producer
        self._traps = traps
        self._interval = interval
        self._chunk = max(1, chunk)
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.announced = 0

    async def start(self) -> None:
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name="linkbase-outbox")

    async def stop(self, timeout: float = 10.0) -> None:
        """Lets a run in progress finish its chunk (a cancelled chunk would be announced twice)."""
        self._stopping.set()
        self._woken.set()
        if self._task is not None:
            done, _pending = await asyncio.wait({self._task}, timeout=timeout)
            if not done:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.publish_pending()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("publishing pending discoveries failed (they stay pending): %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), timeout=self._interval)
            self._woken.clear()

    def wake(self) -> None:
        """Runs the outbox now rather than at the next interval (new pending rows were committed)."""
        self._woken.set()

    async def publish_pending(self) -> int:
        """Announces every pending URL, chunk by chunk; returns how many were announced."""
        total = 0
        async with self._lock:
            while True:
                sent = await self._publish_chunk()
                total += sent
                if sent < self._chunk or self._stopping.is_set():
                    break
        if total:
            log.info("announced %s discovered URLs", total)
        return total

    async def _publish_chunk(self) -> int:
        async with self._db.transaction() as conn:
            cur = await conn.execute(_SELECT_PENDING, (self._chunk,))
            rows = await cur.fetchall()
            if not rows:
                return 0
            paths = {row[1]: (row[0], trap_path_key(row[2])) for row in rows}
            penalties = await path_penalties(conn, self._traps, paths.values())
            for _host_id, fp, url, host, depth, source, first_seen_ms, seed, occurrences in rows:
                host = host or normalized_host(url)
                message = pb.DiscoveredUrl(
                    url=url,
                    host=host,
                    depth=depth or 0,
                    discovered_from=source or "",
                    discovered_at_ms=first_seen_ms,
                    source=pb.DISCOVERY_SOURCE_SEED if seed else pb.DISCOVERY_SOURCE_LINK,
                    path_key=paths[fp][1],
                    path_penalty=penalties.get(paths[fp], 0.0),
                    occurrences=occurrences if source else 0,
                )
                self._producer.send(DISCOVERED_URLS, host, message)
            await self._producer.flush()
            await conn.execute(_MARK_ANNOUNCED, ([row[0] for row in rows], [row[1] for row in rows]))
        metrics.MESSAGES_PRODUCED.labels("linkbase", DISCOVERED_URLS.name).inc(len(rows))
        self.announced += len(rows)
        return len(rows)
