"""Whether the broker still answers, and still holds the topics a service started with.

librdkafka reconnects by itself, and against a durable broker (Apache Kafka restarted in a
rolling upgrade) that is all a client needs. A broker that comes back *without its data*
(Tansu's memory-only build) is another matter: the topics are gone or created again
empty, the committed offsets are gone, and an idempotent producer is stuck for good (the
broker answers every produce of its producer id with UNKNOWN_PRODUCER_ID, and librdkafka
bumps the epoch and tries again, forever). A process in that state looks alive and
serves nothing.

So every transport error a client reports (``note_disconnect``, from librdkafka's error
callback) makes the next ``check`` ask the broker for the ids of the topics the service
started with (:func:`libs.common.kafka.topic_admin.topic_ids`). The same ids: the broker
kept its data, nothing to do. A topic missing or with another id: the broker lost its
data, and ``check`` says so at once; the service then exits for its supervisor to start
it afresh (new clients, declared topics created again, input read from the earliest
offset). No answer: the broker is away, and ``check`` says so once it has been away for
``stall_seconds``. librdkafka does not report every lost connection (an idle one may go
quietly), so the ids are also asked for every ``verify_every`` seconds regardless.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from libs.common.kafka.topic_admin import BrokerUnreachable, admin_client, topic_ids

log = logging.getLogger(__name__)


class BrokerWatch:
    """See the module docstring. ``topics``: each topic's id when the service started."""

    def __init__(self, bootstrap: str, topics: dict[str, str], stall_seconds: float,
                 probe_timeout: float = 3.0, verify_every: float = 5.0) -> None:
        self._bootstrap = bootstrap
        self._topics = dict(topics)
        self._stall_seconds = stall_seconds
        self._probe_timeout = probe_timeout
        self._lock = threading.Lock()
        self._disconnects = 0  # transport errors noted; a check clears the ones it saw answered
        self._answered = 0
        self._away_since: float | None = None
        self._verify_every = verify_every
        self._verified_at = time.monotonic()

    def note_disconnect(self) -> None:
        """A client lost its connection (any thread): the next check asks the broker."""
        with self._lock:
            self._disconnects += 1

    async def check(self) -> str | None:
        """Why the service cannot go on (the broker lost its data, or is away too long), else None."""
        with self._lock:
            seen = self._disconnects
        if seen == self._answered and time.monotonic() - self._verified_at < self._verify_every:
            return None
        try:
            ids = await asyncio.to_thread(self._probe)
        except BrokerUnreachable as exc:
            now = time.monotonic()
            if self._away_since is None:
                self._away_since = now
                log.warning("the broker does not answer: %s", exc)
            away = now - self._away_since
            if self._stall_seconds > 0 and away >= self._stall_seconds:
                return f"the broker has not answered for {away:.0f} s"
            return None
        self._away_since = None
        self._verified_at = time.monotonic()
        changed = sorted(name for name, topic_id in self._topics.items() if ids.get(name) != topic_id)
        if changed:
            missing = [name for name in changed if ids.get(name) is None]
            how = "without" if len(missing) == len(changed) else "with new incarnations of"
            return (f"the broker came back {how} the topics this service started with ({', '.join(changed)}):"
                    " it lost its data, so this process's producer and offsets are void")
        if seen != self._answered:
            log.info("the broker answers again with the same topics")
        self._answered = seen
        return None

    def _probe(self) -> dict[str, str | None]:
        return topic_ids(admin_client(self._bootstrap), list(self._topics), self._probe_timeout)
