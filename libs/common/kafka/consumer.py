"""A protobuf consumer with at-least-once processing, retries and dead letters.

A consumer is given one :class:`TopicHandler` per topic it reads: a declared topic and the
handler of that topic's records, typed by the topic's message (``Sequence[Record[pb.PageLinks]]``
for page links). Records are decoded by their topic's declared type; undecodable ones go
straight to the dead-letter topic. Each poll's records are handed over in batches, one per
topic (in the order of each partition; topics in the order their handlers were given, so
that discoveries can be admitted before the priorities that name them), so a handler sees
only its own topic's records and never asks which topic a record came from.
Offsets are committed only after every batch of the poll was handled and the producer
flushed, so a crash replays at most the uncommitted tail: handlers must be idempotent.

A handler failure is retried: :class:`RetryableError` and connection failures (a
dependency is down) forever with backoff, anything else up to ``max_attempts`` times,
after which the record is dead-lettered (the batch is first split to find the records
that fail alone).

A consumer that can no longer make progress says why in ``stalled`` (its service asks every
second, then exits for a restart): its loop ended on an error, or it was evicted from its
group for exceeding ``max.poll.interval.ms``. With no committed offset (a new group, or a
broker that lost its offsets) and for an offset out of range, reading starts at the
earliest record.

Subclasses may hand records over differently (the fetcher's consumer runs one task per
record, :mod:`services.fetcher.partitions.in_hand_consumer`): they replace ``_run`` and
``_drain`` and use the helpers below.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from confluent_kafka import Consumer, KafkaError, TopicPartition
from google.protobuf.message import Message

from libs.common import metrics
from libs.common.errors import RetryableError
from libs.common.kafka.codec import ProtoCodec, UndecodableMessage, decode_key
from libs.common.kafka.dead_letters import DeadLetterSink, log_fields
from libs.common.kafka.lag_gauge import LagGauge
from libs.common.kafka.offsets import PartitionOffsets
from libs.common.kafka.producer import DeliveryFailed, TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.kafka.topic_admin import admin_client, topic_ids
from libs.common.topics import INPUTS, Topic

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)
M_co = TypeVar("M_co", bound=Message, covariant=True)


@dataclass(frozen=True)
class Record(Generic[M_co]):
    topic: Topic[M_co]
    partition: int
    offset: int
    key: str
    value: M_co
    timestamp_ms: int
    raw_key: bytes | None
    raw_value: bytes | None
    incarnation: str = ""  # the topic's id: offsets of one incarnation mean nothing in the next (stored_offsets)


BatchHandler: TypeAlias = Callable[[Sequence[Record[M]]], Awaitable[None]]
"""Handles a batch of one topic's records, in the order of each partition; raises to have them retried."""


@dataclass(frozen=True)
class TopicHandler(Generic[M]):
    """A declared topic and the handler of its records (``TopicHandler(PAGE_LINKS, handler.page_links)``).

    The pairing is checked by type: a handler of ``Sequence[Record[pb.Document]]`` does not go with
    ``PAGE_LINKS``.
    """

    topic: Topic[M]
    handle: BatchHandler[M]


def by_topic(records: Sequence[Record[Any]]) -> dict[str, list[Record[Any]]]:
    """The records of each topic (by declared name), in their order."""
    groups: dict[str, list[Record[Any]]] = {}
    for record in records:
        groups.setdefault(record.topic.name, []).append(record)
    return groups


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (RetryableError, DeliveryFailed, ConnectionError, TimeoutError)):
        return True
    try:
        import psycopg

        return isinstance(exc, (psycopg.OperationalError, psycopg.errors.SerializationFailure))
    except ImportError:  # pragma: no cover
        return False


class TopicConsumer:
    """Consumes declared topics in a consumer group and drives their handlers (see module doc)."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        service: str,
        group_id: str,
        handlers: Sequence[TopicHandler[Any]],
        producer: TopicProducer,
        batch_size: int = 500,
        poll_timeout: float = 0.2,
        batch_wait: float | None = None,
        fetch_wait_ms: int | None = None,
        retry_backoff: float = 0.5,
        max_backoff: float = 10.0,
        assignment: str = "cooperative-sticky",
    ) -> None:
        """``assignment="range"`` co-partitions topics with equal partition counts (same numbers, same member).

        ``fetch_wait_ms`` (default the settings' ``fetch_wait_max_ms``): how long the broker may hold a
        fetch for want of data, for consumers on the fetch loop (``loop_fetch_wait_max_ms``).
        """
        names = [h.topic.name for h in handlers]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"one handler per topic, at least one: {names}")
        declared = [t.name for t in INPUTS.get(service, ())]
        if service in INPUTS and names != declared:
            raise ValueError(f"{service} consumes {declared} (topics.INPUTS), in that order: not {names}")
        self._settings = settings
        self._service = service
        self._group_id = group_id
        self._handlers: dict[str, TopicHandler[Any]] = {h.topic.name: h for h in handlers}
        self._topics: dict[str, Topic] = {settings.topic(h.topic.name): h.topic for h in handlers}
        self._codecs = {name: ProtoCodec(t.message_type) for name, t in self._topics.items()}
        self._producer = producer
        self._dead = DeadLetterSink(producer, service)
        metrics.declare_consumer(service, {name: t.name for name, t in self._topics.items()})
        self._batch_size = batch_size
        self._poll_timeout = poll_timeout
        self._batch_wait = settings.batch_wait_ms / 1000.0 if batch_wait is None else batch_wait
        self._fetch_wait_ms = fetch_wait_ms
        self._retry_backoff = retry_backoff
        self._max_backoff = max_backoff
        self._assignment = assignment
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{service}-consumer")
        self._consumer: Consumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._lock = threading.Lock()
        self._trackers: dict[tuple[str, int], PartitionOffsets] = {}
        self.assigned: set[tuple[str, int]] = set()
        self.processed = 0
        self._evicted: str | None = None  # why the group evicted this member, if it did
        self._incarnations: dict[str, str] = {}  # topic name -> its id when this consumer started

    def assigned_partitions(self, topic: Topic) -> set[int]:
        """Partitions of ``topic`` this member owns now."""
        name = self._settings.topic(topic.name)
        with self._lock:
            return {p for t, p in self.assigned if t == name}

    @property
    def batch_wait(self) -> float | None:
        """How long a batch waits to fill once records came (``None``: until full or ``poll_timeout``)."""
        return self._batch_wait

    @property
    def fetch_wait_ms(self) -> int:
        """How long the broker may hold this consumer's fetch for want of data."""
        return self._settings.fetch_wait_max_ms if self._fetch_wait_ms is None else self._fetch_wait_ms

    @property
    def dead_letters(self) -> int:
        return self._dead.count

    # lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        # Each record carries its topic's id: a broker that lost its data numbers offsets from 0 again, and a
        # service that stores the offsets it applied must not take the new ones for old ones. The ids hold
        # for the process's life (a topic created again ends the service: broker_watch).
        ids = await asyncio.to_thread(topic_ids, admin_client(self._settings.bootstrap), list(self._topics), 10.0)
        self._incarnations = {name: topic_id or "" for name, topic_id in ids.items()}
        config = self._settings.consumer_config(self._group_id, f"{self._service}-{id(self):x}", self._assignment,
                                                self.fetch_wait_ms)
        if self._settings.lag_metrics_interval_ms > 0:
            config["statistics.interval.ms"] = self._settings.lag_metrics_interval_ms
            config["stats_cb"] = LagGauge(self._service, {name: t.name for name, t in self._topics.items()})
        config["error_cb"] = self._producer.note_error  # a lost connection has the broker checked
        self._consumer = Consumer(config)
        self._consumer.subscribe(list(self._topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
                                 on_lost=self._on_revoke)
        self._task = asyncio.create_task(self._run(), name=f"{self._service}-consume")

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Stops polling, lets in-flight records finish, flushes, commits and leaves the group."""
        self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=drain_timeout + 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        await self._drain(drain_timeout)
        consumer = self._consumer
        if consumer is not None:
            try:
                await self._producer.flush()
                await self._call(self._commit_tracked)
            except Exception:
                log.exception("final commit failed; uncommitted records will be redelivered")
            await self._call(consumer.close)
            self._consumer = None
        self._executor.shutdown(wait=False)

    async def _drain(self, timeout: float) -> None:
        """After the loop ended on stop: waits for records still being handled (none here: the loop handles
        each batch before it polls again)."""

    async def stalled(self) -> str | None:
        """Why this consumer cannot make progress (see the module docstring), else None."""
        task = self._task
        if task is not None and task.done() and not self._stopping.is_set():
            exc = None if task.cancelled() else task.exception()
            return f"the consume loop ended: {exc!r}" if exc is not None else "the consume loop ended"
        return self._evicted

    async def wait(self) -> None:
        """Returns when the consume loop ends (it only ends on stop or a fatal error)."""
        if self._task is not None:
            await self._task

    # consumer thread helpers -------------------------------------------------------------
    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _consume(self, consumer: Consumer, room: int) -> list[Any]:
        """Up to ``room`` records, waiting at most ``poll_timeout`` for any.

        A batch consume waits for ``room`` records or the timeout; with ``batch_wait`` it returns
        the records that came within ``batch_wait`` as soon as there are any, so that a few records
        are not held back until a full batch or the poll timeout (and returns early on stop).
        """
        if self._batch_wait is None or self._batch_wait >= self._poll_timeout:
            return list(consumer.consume(room, self._poll_timeout))
        deadline = time.monotonic() + self._poll_timeout
        while True:
            raw = consumer.consume(room, self._batch_wait)
            if raw or time.monotonic() >= deadline or self._stopping.is_set():
                return list(raw)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self.assigned.add((tp.topic, tp.partition))
        log.info("assigned %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit_tracked(only={(tp.topic, tp.partition) for tp in partitions})
        with self._lock:
            for tp in partitions:
                self.assigned.discard((tp.topic, tp.partition))
                self._trackers.pop((tp.topic, tp.partition), None)
        log.info("revoked %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in partitions))

    def _positions(self, only: set[tuple[str, int]] | None = None) -> list[TopicPartition]:
        """The offsets of the records done so far, to commit once what they produced is flushed."""
        with self._lock:
            return [
                TopicPartition(topic, partition, position)
                for (topic, partition), tracker in self._trackers.items()
                if (only is None or (topic, partition) in only)
                and (position := tracker.commit_position()) is not None
            ]

    def _commit_tracked(self, only: set[tuple[str, int]] | None = None,
                        offsets: list[TopicPartition] | None = None) -> None:
        """Commits ``offsets`` (default: the positions now; only safe when nothing is being processed)."""
        consumer = self._consumer
        if consumer is None:
            return
        if offsets is None:
            offsets = self._positions(only)
        with self._lock:  # a partition revoked since the positions were taken is no longer ours to commit
            offsets = [tp for tp in offsets if (tp.topic, tp.partition) in self._trackers]
        if offsets:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except Exception as exc:
                log.warning("commit failed (records will be redelivered): %s", exc)

    # main loop ---------------------------------------------------------------------------
    async def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._stopping.is_set():
            raw = await self._poll(consumer, self._batch_size)
            if raw is None:
                continue
            records = self._decode(raw)
            if records or raw:
                await self._process_batch(records)
                await self._producer.flush()
                await self._call(self._commit_tracked)

    async def _poll(self, consumer: Consumer, room: int) -> list[Any] | None:
        """Up to ``room`` raw records (see ``_consume``); None after a failed consume (logged, then a pause)."""
        try:
            raw: list[Any] = await self._call(self._consume, consumer, room)
        except Exception:
            log.exception("consume failed")
            await asyncio.sleep(1.0)
            return None
        return raw

    def _decode(self, raw: list[Any]) -> list[Record[Any]]:
        records: list[Record[Any]] = []
        for msg in raw:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._MAX_POLL_EXCEEDED:
                    self._evicted = f"evicted from group {self._group_id}: {err.str()}"
                if err.code() != KafkaError._PARTITION_EOF:
                    log.warning("consumer error: %s", err)
                continue
            name, partition, offset = msg.topic(), msg.partition(), msg.offset()
            with self._lock:
                tracker = self._trackers.setdefault((name, partition), PartitionOffsets())
                tracker.add(offset)
            topic = self._topics[name]
            try:
                value = self._codecs[name].decode(msg.value())
                key = decode_key(msg.key())
            except UndecodableMessage as exc:
                self._dead.send(topic=name, partition=partition, offset=offset, key=msg.key(),
                                value=msg.value(), error=str(exc), reason=metrics.UNDECODABLE, attempts=1)
                self._mark_done(name, partition, offset)
                continue
            ts = msg.timestamp()[1]
            records.append(Record(topic, partition, offset, key, value, ts, msg.key(), msg.value(),
                                  self._incarnations.get(name, "")))
        return records

    def _mark_done(self, topic: str, partition: int, offset: int) -> None:
        with self._lock:
            tracker = self._trackers.get((topic, partition))
            if tracker is not None:
                tracker.done(offset)

    def _done_all(self, records: Sequence[Record[Any]]) -> None:
        counts: dict[str, int] = {}  # records per topic: one lock and one counter update per batch, not per record
        with self._lock:
            for r in records:
                name = r.topic.name
                tracker = self._trackers.get((self._settings.topic(name), r.partition))
                if tracker is not None:
                    tracker.done(r.offset)
                counts[name] = counts.get(name, 0) + 1
        for name, n in counts.items():
            metrics.MESSAGES_CONSUMED.labels(self._service, name).inc(n)
        self.processed += len(records)

    def _handler(self, record: Record[Any]) -> TopicHandler[Any]:
        return self._handlers[record.topic.name]

    async def _attempt(self, records: list[Record[Any]], max_attempts: int) -> BaseException | None:
        """Runs the records' handler (all of one topic); transient failures retry forever, others up to
        max_attempts."""
        handler = self._handler(records[0])
        attempt = 0
        backoff = self._retry_backoff
        while True:
            try:
                await handler.handle(records)
                return None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                transient = _is_transient(exc)
                kind = "transient" if transient else "error"
                metrics.HANDLER_RETRIES.labels(self._service, records[0].topic.name, kind).inc()
                if not transient:
                    attempt += 1
                    if attempt >= max_attempts:
                        return exc
                if self._stopping.is_set() and transient:
                    raise
                log.warning("handler failed (%s, attempt %s): %s", kind, attempt, exc,
                            exc_info=not transient, extra=log_fields(records[0].value) if len(records) == 1 else {})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)

    async def _process_batch(self, records: list[Record[Any]]) -> None:
        """Hands each topic's records of one poll to that topic's handler, topics in the handlers' order."""
        if not records:
            return
        started = time.monotonic()
        groups = by_topic(records)
        for name in self._handlers:
            if name in groups:
                await self._process_topic_batch(groups[name])
        metrics.BATCH_SECONDS.labels(self._service).observe(time.monotonic() - started)

    async def _process_topic_batch(self, records: list[Record[Any]]) -> None:
        failure = await self._attempt(records, self._settings.max_attempts)
        if failure is not None and len(records) > 1:
            for record in records:  # isolate the poison: process one at a time
                await self._process_topic_batch([record])
            return
        if failure is not None:
            self._dead_letter(records[0], failure)
        self._done_all(records)

    def _dead_letter(self, record: Record[Any], exc: BaseException) -> None:
        self._dead.send(
            topic=self._settings.topic(record.topic.name), partition=record.partition, offset=record.offset,
            key=record.raw_key, value=record.raw_value, error=f"{type(exc).__name__}: {exc}",
            reason=metrics.HANDLER_FAILED, attempts=self._settings.max_attempts, context=log_fields(record.value),
        )
