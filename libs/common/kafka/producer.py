"""An asyncio-friendly protobuf producer on confluent-kafka.

``send`` enqueues (librdkafka batches and compresses); ``flush`` waits until every message
sent so far is acknowledged and raises if any was not. librdkafka reports failed deliveries
only (``delivery.report.only.error``) to one producer-wide callback, and the reports are
served every ``POLL_EVERY`` sends and by ``flush``: a message costs no Python callback and
no poll of its own. Consumers flush before they
commit their input offsets, so a message is never acknowledged upstream before what it
caused is durable downstream (at-least-once). Code that sends lazily (the fetcher
publishes finished fetches in runs) registers a hook with ``before_flush``: every flush
runs it first, and a hook that raises fails the flush.

At start the producer creates the declared topics that are missing
(``TRAWL_KAFKA_ENSURE_TOPICS``; a broker that does not answer is a ConnectionError, which
a starting service waits out). Its service asks ``stalled`` every second: messages left
unacknowledged for ``TRAWL_KAFKA_STALL_SECONDS``, or a broker that lost its data or stays
away (:mod:`libs.common.kafka.broker_watch`), make the service exit for a restart.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from google.protobuf.message import Message

from libs.common.kafka.broker_watch import BrokerWatch
from libs.common.kafka.codec import encode_key
from libs.common.kafka.settings import KafkaSettings
from libs.common.kafka.topic_admin import ensure_topics
from libs.common.topics import ALL_TOPICS, Topic

log = logging.getLogger(__name__)


POLL_EVERY = 64
"""Sends between two polls of librdkafka's report queue (which holds failed deliveries only)."""


class MessageTooLarge(ValueError):
    pass


class DeliveryFailed(RuntimeError):
    pass


class TopicProducer:
    """Sends protobuf messages to declared topics. Start it, send, flush, stop."""

    def __init__(self, settings: KafkaSettings, client_id: str) -> None:
        self._settings = settings
        self._client_id = client_id
        self._producer: Producer | None = None
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{client_id}-producer")
        self._before_flush: list[Callable[[], None]] = []
        self._unacked_since: float | None = None  # start of the first flush not followed by a successful one
        self._watch: BrokerWatch | None = None
        self._fatal: str | None = None
        self.sent = 0

    def before_flush(self, hook: Callable[[], None]) -> None:
        """Runs ``hook`` (on the event loop) at the start of every flush; if it raises, the flush raises after it."""
        self._before_flush.append(hook)

    async def start(self) -> None:
        settings = self._settings
        if settings.ensure_topics:
            # replication factor -1: the broker's default (the init job sets it explicitly).
            ready = await asyncio.to_thread(ensure_topics, settings.bootstrap,
                                            [(settings.topic(t.name), t.partitions) for t in ALL_TOPICS],
                                            replication_factor=-1, timeout=10.0)
            self._watch = BrokerWatch(settings.bootstrap, ready.ids, settings.stall_seconds)
        self._producer = Producer({
            **settings.producer_config(self._client_id),
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
            "error_cb": self._on_error,
        })

    async def stop(self) -> None:
        if self._producer is not None:
            try:
                await self.flush(timeout=30.0)
            finally:
                self._producer = None
                self._executor.shutdown(wait=False)

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            with self._lock:
                self._errors.append(str(err))

    def note_error(self, err: KafkaError) -> None:
        """A Kafka client of this service reported ``err`` (librdkafka's error callback, any thread)."""
        if err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) and self._watch is not None:
            self._watch.note_disconnect()

    def _on_error(self, err: KafkaError) -> None:
        self.note_error(err)
        if err.fatal():
            with self._lock:
                self._errors.append(f"fatal: {err}")
            self._fatal = str(err)

    async def stalled(self) -> str | None:
        """Why this producer cannot make progress (see the module docstring), else None."""
        if self._fatal is not None:
            return f"the producer hit a fatal error: {self._fatal}"
        since = self._unacked_since
        limit = self._settings.stall_seconds
        if since is not None and limit > 0 and time.monotonic() - since >= limit:
            return f"messages sent {time.monotonic() - since:.0f} s ago are still not acknowledged"
        return await self._watch.check() if self._watch is not None else None

    def send(self, topic: Topic, key: str, message: Message) -> None:
        """Enqueues one message; raises MessageTooLarge before it reaches the broker."""
        if not isinstance(message, topic.message_type):
            raise TypeError(f"{topic.name} carries {topic.message_type.__name__}, not {type(message).__name__}")
        self.send_raw(self._settings.topic(topic.name), encode_key(key), message.SerializeToString())

    def send_raw(self, topic_name: str, key: bytes | None, value: bytes) -> None:
        producer = self._require()
        if len(value) > self._settings.max_message_bytes:
            raise MessageTooLarge(f"{len(value)} bytes for {topic_name} exceeds {self._settings.max_message_bytes}")
        while True:
            try:
                producer.produce(topic_name, value, key)
                self.sent += 1
                break
            except BufferError:
                producer.poll(0.1)  # local queue full: serve delivery reports, then retry
        if not self.sent % POLL_EVERY:
            producer.poll(0)

    async def flush(self, timeout: float = 60.0) -> None:
        """Waits until everything sent is acknowledged; raises DeliveryFailed otherwise."""
        producer = self._require()
        if self._unacked_since is None:
            self._unacked_since = time.monotonic()
        hook_failure: Exception | None = None
        for hook in self._before_flush:
            try:
                hook()
            except Exception as exc:  # what was sent is still flushed; the flush fails after it
                hook_failure = hook_failure or exc
        remaining = await asyncio.get_running_loop().run_in_executor(self._executor, producer.flush, timeout)
        with self._lock:
            errors, self._errors = self._errors, []
        if remaining:
            raise DeliveryFailed(f"{remaining} message(s) not acknowledged within {timeout}s")
        if errors:
            raise DeliveryFailed(f"{len(errors)} message(s) failed: {errors[0]}")
        self._unacked_since = None  # what was sent is acknowledged (a hook failing sent nothing new)
        if hook_failure is not None:
            raise DeliveryFailed(f"sending before the flush failed: {hook_failure}") from hook_failure

    def _require(self) -> Producer:
        if self._producer is None:
            raise KafkaException("producer is not started")
        return self._producer
