"""What a broker that lost its data took with it, recovered from the frontier and the link base.

Apache Kafka keeps its topics through a restart. A broker that does not (Tansu's
memory-only build) comes back empty, and whatever was on the topics then is gone: fetch
requests, outcomes, results, documents, page links, discovered URLs. The services'
durable state says what that was:

- requests in flight whose request or outcome was lost: the unsent-requests check finds
  them missing from the (new, empty) fetch-request topic and queues them again
  (:mod:`services.scheduler.recovery.unsent_requests`);
- pages the frontier holds as fetched (with a 2xx answer) whose links never reached the
  link base: the link base's ``links_at`` (the fetch time of the page's stored links) is
  empty or older than that fetch. Its ``fetched`` flag would not do: a page's document
  may have reached the link base while its links were lost. They are queued again, to be
  fetched once more, unconditionally (their validators dropped: a 304 would bring no
  links);
- URLs the link base announced (``announce_state = 2``) that never reached the frontier
  (absent, or only ``known`` from an importance update): they are announced again on
  ``trawl.discovered-urls`` (with no trap penalty: the link base's is not in its read
  view), which admits each at most once.

A broker loss is told by the fetch-request topic's id (a new topic has a new id). The id
and the last time it was seen are kept in ``scheduler.state`` and refreshed every check
(the dispatcher's unsent-requests round). When the id changes, the pages fetched and the
URLs first seen since ``WINDOW`` before that last sighting are reconciled, once (pages
fetched after this process started, which went through the broker as it is now, are left
to arrive; every service restarts after a loss, the scheduler too): the
state moves to the new id in the transaction that queues the pages again, after the
rediscovered URLs were acknowledged, so a crash half-way only repeats idempotent work.
The link base is read through its read view ``linkbase.v_urls_v1``, never its tables.
"""

from __future__ import annotations

import asyncio
import logging
import time

from libs.common.db.pool import Database
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.kafka.topic_admin import BrokerUnreachable, admin_client, topic_ids
from libs.common.topics import DISCOVERED_URLS, FETCH_REQUESTS
from libs.common.wire import messages as pb

log = logging.getLogger(__name__)

STATE_KEY = "kafka.fetch_requests_topic"
"""``scheduler.state`` key: '<topic id> <epoch seconds it was last seen>'."""

WINDOW = 600.0
"""Seconds before the last sighting of the lost topic from which pages and URLs are reconciled: what went
through the pipeline earlier than that had long reached its end."""

LINKS_TOLERANCE = 30.0
"""Seconds by which the fetch time of a page's stored links (the link base's ``links_at``) may precede the
frontier's fetch time and still be the links of that fetch (both are the fetcher's stamp; a revisit comes
much later)."""

_STATE = "SELECT value FROM scheduler.state WHERE key = %s FOR UPDATE"
_PUT_STATE = (
    "INSERT INTO scheduler.state (key, value) VALUES (%s, %s)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_UNANNOUNCED = (
    "SELECT u.url, u.host, coalesce(u.depth, 0), (extract(epoch FROM u.first_seen) * 1000)::bigint"
    " FROM linkbase.v_urls_v1 u LEFT JOIN scheduler.frontier f ON f.url_fp = u.url_fp"
    " WHERE u.announce_state = 2 AND u.first_seen >= to_timestamp(%s) AND (f.url_fp IS NULL OR f.status = 'known')"
)
_REFETCH = (
    "UPDATE scheduler.frontier f SET status = 'queued', attempts = 0, next_fetch_at = now(),"
    " etag = NULL, last_modified = NULL, validated_at = NULL,"  # fetched in full: a 304 brings no links
    " last_error = 'fetched before a broker lost its data; its links never reached the link base'"
    " FROM linkbase.v_urls_v1 u"
    " WHERE u.url_fp = f.url_fp AND f.status = 'fetched' AND f.fetched_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)"
    " AND f.http_status BETWEEN 200 AND 299"
    " AND (u.links_at IS NULL OR u.links_at < f.fetched_at - make_interval(secs => %s))"
    " RETURNING f.host"
)


class BrokerLoss:
    """Tells a broker that lost its data and recovers what it took (see the module docstring)."""

    def __init__(self, db: Database, kafka: KafkaSettings, producer: TopicProducer, window: float = WINDOW,
                 timeout: float = 5.0) -> None:
        self._db = db
        self._bootstrap = kafka.bootstrap
        self._topic = kafka.topic(FETCH_REQUESTS.name)
        self._producer = producer
        self._window = window
        self._timeout = timeout
        self._started = time.time()  # pages fetched since went through the broker as it is now
        self.reconciled = 0

    async def check(self) -> int:
        """Records the topic's id as seen; after a loss, reconciles and returns the pages and URLs recovered."""
        try:
            ids = await asyncio.to_thread(topic_ids, admin_client(self._bootstrap), [self._topic], self._timeout)
        except BrokerUnreachable as exc:
            log.warning("cannot tell whether the broker kept its data: %s", exc)
            return 0
        current = ids.get(self._topic)
        if not current:
            return 0  # not created again yet (every service creates it at start), or a broker without ids
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT value FROM scheduler.state WHERE key = %s", (STATE_KEY,))
            row = await cur.fetchone()
        old_id, seen = _parse(str(row[0])) if row else (current, time.time())
        if old_id == current:
            async with self._db.transaction() as conn:
                await conn.execute(_PUT_STATE, (STATE_KEY, f"{current} {time.time():.0f}"))
            return 0
        since = seen - self._window
        announced = await self._announce_lost(since)
        async with self._db.transaction() as conn:
            cur = await conn.execute(_STATE, (STATE_KEY,))
            row = await cur.fetchone()
            if row is None or _parse(str(row[0]))[0] != old_id:
                return announced  # another replica reconciled meanwhile
            cur = await conn.execute(_REFETCH, (since, self._started, LINKS_TOLERANCE))
            hosts = [str(r[0]) for r in await cur.fetchall()]
            await conn.execute(_PUT_STATE, (STATE_KEY, f"{current} {time.time():.0f}"))
        log.warning("the broker lost its data (%s has a new id): %d pages fetched since then whose links never"
                    " reached the link base queued again, %d URLs the link base announced announced again",
                    self._topic, len(hosts), announced, extra={"hosts": ",".join(sorted(set(hosts)))[:500]})
        self.reconciled += len(hosts) + announced
        return len(hosts) + announced

    async def _announce_lost(self, since: float) -> int:
        """Announces again the URLs the link base announced since ``since`` that the frontier does not hold."""
        async with self._db.connection() as conn:
            cur = await conn.execute(_UNANNOUNCED, (since,))
            rows = await cur.fetchall()
        for url, host, depth, first_seen_ms in rows:
            self._producer.send(DISCOVERED_URLS, str(host), pb.DiscoveredUrl(
                url=str(url), host=str(host), depth=int(depth), discovered_at_ms=int(first_seen_ms),
                source=pb.DISCOVERY_SOURCE_LINK))
        if rows:
            await self._producer.flush()
        return len(rows)


def _parse(value: str) -> tuple[str, float]:
    topic_id, _, seen = value.partition(" ")
    try:
        return topic_id, float(seen)
    except ValueError:
        return topic_id, time.time()
