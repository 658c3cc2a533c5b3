"""The scheduler's floor: what any frontier on PostgreSQL and Kafka pays per fetch request here.

Run by ``bench/scheduler_scale.py --floor`` beside the scheduler service, on the same loaded
frontier, broker and stand-in fetcher. The floor process does only what every durable frontier
must: it hands out queued URLs best first (read once from the frontier, no selection per host,
no host state, no freshness plan), produces a ``FetchRequest`` for each, consumes the outcomes
and applies each to its URL's frontier row (status, fetch time, HTTP status, outcome) in one
committed statement per batch, durable, within the same in-flight budget. With ``writes=2`` a
round also marks its URLs in flight first (one statement per round), as the scheduler does.

So its rate bounds the scheduler from above on this machine: one (or two) frontier row versions
per request and both Kafka hops, nothing else. What the scheduler spends beyond it is selection,
host state (two host row versions per request), revisit planning and its own Python.

    python -m bench.scheduler_floor DSN BOOTSTRAP PREFIX URLS IN_FLIGHT BATCH OUTCOME_BATCH WRITES
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from datetime import UTC, datetime

import psycopg
from confluent_kafka import Consumer, Message, Producer

from libs.common.db.arrays import int4_array, int8_array, text_array, timestamptz_array
from libs.common.kafka.codec import encode_key
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_OUTCOMES, FETCH_REQUESTS
from libs.common.wire import messages as pb

_TAKE = (
    "UPDATE scheduler.frontier SET status = 'in_flight', attempts = attempts + 1, dispatched_at = now(),"
    " request_id = r.rid FROM unnest(%b::bigint[], %b::text[]) AS r(fp, rid)"
    " WHERE url_fp = r.fp AND status = 'queued'"
)
# The outcome's own columns, as the scheduler's outcome statement writes them for a fetched page.
_APPLY = (
    "UPDATE scheduler.frontier f SET status = 'fetched', fetched_at = o.at, http_status = o.http,"
    " last_outcome = o.outcome, last_error = NULL, request_id = NULL, fetch_seq = nextval('scheduler.fetch_seq')"
    " FROM unnest(%b::bigint[], %b::timestamptz[], %b::int[], %b::text[]) AS o(fp, at, http, outcome)"
    " WHERE f.url_fp = o.fp"
)


class Floor:
    """Hands out ``urls`` best first within ``in_flight``; applies outcomes ``outcome_batch`` at a time."""

    def __init__(self, dsn: str, kafka: KafkaSettings, urls: int, in_flight: int, batch: int,
                 outcome_batch: int, writes: int) -> None:
        self._dsn, self._kafka = dsn, kafka
        self._in_flight, self._batch, self._outcome_batch, self._writes = in_flight, batch, outcome_batch, writes
        with psycopg.connect(dsn) as conn:
            rows = conn.execute(
                "SELECT url_fp, url, host, priority, depth FROM scheduler.frontier WHERE status = 'queued'"
                " ORDER BY priority DESC, url_fp LIMIT %s", (urls,)
            ).fetchall()
        self._rows: list[tuple[int, str, str, float, int]] = [
            (int(fp), str(u), str(h), float(p), int(d)) for fp, u, h, p, d in rows]
        self._fp_of = {url: fp for fp, url, _h, _p, _d in self._rows}
        self._sent = self._applied = self.most_out = 0
        self._room = threading.Condition()
        self._stopping = threading.Event()

    @property
    def sent(self) -> int:
        return self._sent

    @property
    def applied(self) -> int:
        return self._applied

    def run(self) -> None:
        """Dispatches and applies outcomes until :meth:`stop` (or the process ends)."""
        dispatch = threading.Thread(target=self._dispatch, name="floor-dispatch", daemon=True)
        dispatch.start()
        self._apply_outcomes()
        dispatch.join()

    def stop(self) -> None:
        self._stopping.set()
        with self._room:
            self._room.notify_all()

    def _dispatch(self) -> None:
        producer = Producer(self._kafka.producer_config("bench-floor"))
        topic = self._kafka.topic(FETCH_REQUESTS.name)
        with psycopg.connect(self._dsn) as conn:
            while self._sent < len(self._rows):
                with self._room:
                    self._room.wait_for(lambda: self._sent - self._applied < self._in_flight or self._stopping.is_set())
                    if self._stopping.is_set():
                        break
                    room = min(self._batch, self._in_flight - (self._sent - self._applied))
                chunk = self._rows[self._sent:self._sent + room]
                ids = [uuid.uuid4().hex for _ in chunk]
                if self._writes == 2:
                    conn.execute(_TAKE, (int8_array([r[0] for r in chunk]), text_array(ids)))
                    conn.commit()
                now_ms = int(time.time() * 1000)
                for (_fp, url, host, priority, depth), rid in zip(chunk, ids, strict=True):
                    request = pb.FetchRequest(request_id=rid, url=url, host=host, priority=priority, attempt=1,
                                              depth=depth, scheduled_at_ms=now_ms)
                    producer.produce(topic, key=encode_key(host), value=request.SerializeToString())
                    producer.poll(0)
                producer.flush()
                with self._room:
                    self._sent += len(chunk)
                    self.most_out = max(self.most_out, self._sent - self._applied)

    def _apply_outcomes(self) -> None:
        consumer = Consumer(self._kafka.consumer_config(f"{self._kafka.topic_prefix}bench-floor", "bench-floor"))
        consumer.subscribe([self._kafka.topic(FETCH_OUTCOMES.name)])
        with psycopg.connect(self._dsn) as conn:
            while not self._stopping.is_set():
                messages = [m for m in consumer.consume(self._outcome_batch, 0.05) if m.error() is None]
                if messages:
                    self._apply(conn, messages)
                    for message in messages:
                        consumer.store_offsets(message)
                    consumer.commit(asynchronous=True)
        consumer.close()

    def _apply(self, conn: psycopg.Connection[tuple[object, ...]], messages: list[Message]) -> None:
        outcomes = [pb.FetchOutcome.FromString(m.value() or b"") for m in messages]
        conn.execute(_APPLY, (
            int8_array([self._fp_of[o.url] for o in outcomes]),
            timestamptz_array([datetime.fromtimestamp(o.fetched_at_ms / 1000, UTC) for o in outcomes]),
            int4_array([o.http_status for o in outcomes]),
            text_array([pb.FetchStatus.Name(o.status) for o in outcomes]),
        ))
        conn.commit()
        with self._room:
            self._applied += len(outcomes)
            self._room.notify_all()


def main() -> None:
    dsn, bootstrap, prefix, urls, in_flight, batch, outcome_batch, writes = sys.argv[1:9]
    if writes not in ("1", "2"):
        raise SystemExit("WRITES is 1 (the outcome) or 2 (in flight, then the outcome)")
    Floor(dsn, KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix), int(urls), int(in_flight), int(batch),
          int(outcome_batch), int(writes)).run()


if __name__ == "__main__":
    main()
