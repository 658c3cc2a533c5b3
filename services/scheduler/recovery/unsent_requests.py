"""Requests the frontier holds in flight that never reached the fetch-request topic.

A dispatch round commits its URLs as in flight, then sends their fetch requests and
flushes. A scheduler killed between the two, or whose flush fails, leaves URLs in flight
that no fetcher will ever see: without this check they would wait out the whole lease
(``TRAWL_SCHEDULER_LEASE_SECONDS``) and hold their hosts all that time.

So every ``age`` seconds the dispatcher asks: which requests of the partitions it owns
have been in flight for longer than ``age``? Those are looked up on the fetch-request
topic, read from the offset of the oldest one's dispatch time (less a clock margin) to
the end of every partition; the ones not found were never sent and are queued again at
once. Nothing is queued again unless the end of every partition was reached. ``age``
is also the grace that lets a live replica finish a send it started: a request it sends
later than that after its dispatch would be fetched twice, which takes a broker outage
longer than ``age``, during which this check cannot read the topic either.

A broker that lost its data (it restarted empty) holds none of the requests in flight, so
this check queues them all again at its next round; the same round first asks
:class:`~services.scheduler.recovery.broker_loss.BrokerLoss` to recover what else the broker took.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from google.protobuf.message import DecodeError

from libs.common.db.pool import Database
from libs.common.kafka.ends import offsets_since, read_to_end
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_REQUESTS
from libs.common.wire import messages as pb
from services.scheduler.frontier.store import RELEASE_HOSTS
from services.scheduler.recovery.broker_loss import BrokerLoss

log = logging.getLogger(__name__)

CLOCK_MARGIN_MS = 5000
"""How far a request's timestamp (the sender's clock) may precede its dispatch time (the database's)."""

_IN_FLIGHT = (
    "SELECT f.request_id, (extract(epoch FROM f.dispatched_at) * 1000)::bigint FROM scheduler.frontier f"
    " JOIN scheduler.hosts h ON h.host = f.host"
    " WHERE f.status = 'in_flight' AND f.dispatched_at < now() - make_interval(secs => %s)"
    " AND h.partition = ANY(%s)"
)
_REQUEUE = (
    "UPDATE scheduler.frontier SET status = 'queued', request_id = NULL,"
    " last_error = 'never sent: queued again'"
    " WHERE status = 'in_flight' AND request_id = ANY(%s)"
    " RETURNING host"
)


class UnsentRequests:
    """Finds and queues again the requests in flight that were never sent (see the module docstring)."""

    def __init__(self, db: Database, kafka: KafkaSettings, age: float, read_timeout: float = 10.0,
                 loss: BrokerLoss | None = None) -> None:
        self._db = db
        self._loss = loss
        self._bootstrap = kafka.bootstrap
        self._topic = kafka.topic(FETCH_REQUESTS.name)
        self.age = age
        self._read_timeout = read_timeout
        self.requeued = 0

    async def requeue(self, partitions: Sequence[int]) -> int:
        """Queues again the owned partitions' requests in flight for over ``age`` that are not on the topic.

        Returns how many, plus the pages and URLs a broker loss check recovered (the dispatcher wakes for them).
        """
        recovered = await self._loss.check() if self._loss is not None else 0
        return recovered + await self._requeue(partitions)

    async def _requeue(self, partitions: Sequence[int]) -> int:
        if not partitions or self.age <= 0:
            return 0
        async with self._db.connection() as conn:
            cur = await conn.execute(_IN_FLIGHT, (self.age, list(partitions)))
            in_flight = {str(rid): int(at_ms) for rid, at_ms in await cur.fetchall()}
        if not in_flight:
            return 0
        since_ms = min(in_flight.values()) - CLOCK_MARGIN_MS
        sent = await asyncio.to_thread(self._sent_since, since_ms, set(in_flight))
        if sent is None:
            return 0
        unsent = sorted(set(in_flight) - sent)
        if not unsent:
            return 0
        async with self._db.transaction() as conn:
            cur = await conn.execute(_REQUEUE, (unsent,))
            hosts = [str(r[0]) for r in await cur.fetchall()]
            if hosts:
                await conn.execute(RELEASE_HOSTS, (hosts,))
        if hosts:
            log.warning("%d requests in flight were never sent (a crash or a failed flush after their dispatch);"
                        " queued again", len(hosts), extra={"hosts": ",".join(sorted(set(hosts)))[:500]})
        self.requeued += len(hosts)
        return len(hosts)

    def _sent_since(self, since_ms: int, wanted: set[str]) -> set[str] | None:
        """The ``wanted`` request ids on the topic from ``since_ms`` on; None when the topic's end was not reached."""
        partitions = list(range(FETCH_REQUESTS.partitions))
        starts = offsets_since(self._bootstrap, [(self._topic, p) for p in partitions], since_ms,
                               self._read_timeout, "unsent-requests")
        sent: set[str] = set()

        def collect(message: Any) -> None:
            try:
                request_id = pb.FetchRequest.FromString(message.value()).request_id
            except DecodeError:  # not a request (the fetchers dead-letter it)
                return
            if request_id in wanted:
                sent.add(request_id)

        ends = read_to_end(self._bootstrap, starts, timeout=self._read_timeout, on_message=collect,
                           purpose="unsent-requests")
        if len(ends) < len(starts):
            log.warning("could not read %s to its end; requests in flight are left to their lease", self._topic)
            return None
        return sent
