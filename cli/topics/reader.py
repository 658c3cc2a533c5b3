"""Reading a topic for people: from an offset, a time or the end, filtered by key or URL.

``peek`` reads what is there and stops at the end of every partition; ``tail`` goes on
waiting for new records. A key (given, or the topic's key for a URL) narrows the read to
the one partition the key maps to. Time starts use the broker's offset-for-time lookup
and then drop the records older than the time, since some brokers (Tansu) answer the
start of a whole batch.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec  # not re-exported for type checkers

from cli.topics.target import Target
from libs.common.kafka.codec import ProtoCodec, UndecodableMessage
from libs.common.kafka.ends import TP, partition_ends, probe_consumer
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import BY_NAME, DEAD_LETTERS, Topic
from libs.common.urls import InvalidUrl, normalize_url

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class BadStart(ValueError):
    """A start option that cannot be understood."""


@dataclass(frozen=True)
class StartAt:
    """Where to start in each partition: ``beginning``, ``end`` (``back`` records before it),
    ``offset`` (``value``) or ``time`` (``value`` in ms since the epoch)."""

    kind: str
    value: int = 0


def parse_time(text: str, now: float | None = None) -> int:
    """Milliseconds since the epoch of an ISO 8601 time (UTC unless it says) or of "15m", "2h", "1d" ago."""
    match = _RELATIVE.match(text.strip())
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        return int(((time.time() if now is None else now) - seconds) * 1000)
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadStart(f"{text!r} is neither an ISO 8601 time nor a duration like 15m, 2h, 1d") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


@dataclass(frozen=True)
class RecordFilter:
    key: str | None = None
    url: str | None = None  # normalised
    since_ms: int | None = None

    def matches(self, msg: Any, topic: Topic | None) -> bool:
        if self.since_ms is not None and msg.timestamp()[1] < self.since_ms:
            return False
        if self.key is not None and msg.key() != self.key.encode("utf-8"):
            return False
        return self.url is None or self.url in message_urls(msg.value(), topic)


def _normalised(url: str) -> str:
    try:
        return normalize_url(url)
    except InvalidUrl:
        return url


def message_urls(raw: bytes | None, topic: Topic | None) -> set[str]:
    """The normalised ``url`` of a message (and of the message a dead letter carries)."""
    if topic is None:
        return set()
    try:
        message: Any = ProtoCodec(topic.message_type).decode(raw)
    except UndecodableMessage:
        return set()
    out = set()
    if "url" in message.DESCRIPTOR.fields_by_name and message.url:
        out.add(_normalised(message.url))
    if topic is DEAD_LETTERS:
        source = next((t for t in BY_NAME.values() if message.source_topic.endswith(t.name)), None)
        out |= message_urls(message.value, source)
    return out


def partitions_to_read(count: int, partition: int | None, key: str | None) -> list[int]:
    """Every partition, the one asked for, or the one ``key`` maps to."""
    if partition is not None:
        if not 0 <= partition < count:
            raise BadStart(f"partition {partition} does not exist (the topic has {count})")
        return [partition]
    if key is not None:
        return [partition_for(key, count)]
    return list(range(count))


def start_offsets(target: Target, topic: str, partitions: list[int], start: StartAt, timeout: float) -> dict[TP, int]:
    tps = [(topic, p) for p in partitions]
    ends = partition_ends(target.bootstrap, tps, timeout=timeout)
    if start.kind == "beginning":
        return {tp: ends[tp].low for tp in tps}
    if start.kind == "end":
        return {tp: max(ends[tp].low, ends[tp].high - start.value) for tp in tps}
    if start.kind == "offset":
        return {tp: min(max(start.value, ends[tp].low), ends[tp].high) for tp in tps}
    if start.kind != "time":
        raise BadStart(f"unknown start {start.kind!r}")
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "log_level": 0})
    spec = OffsetSpec.for_timestamp(start.value)
    futures = admin.list_offsets({TopicPartition(*tp): spec for tp in tps}, request_timeout=timeout)
    out = {}
    for tp, future in futures.items():
        key = (tp.topic, tp.partition)
        found = future.result(timeout).offset
        out[key] = ends[key].high if found < 0 else max(found, ends[key].low)  # -1: nothing that late
    return out


def read_records(
    target: Target, starts: dict[TP, int], *, topic: Topic | None, record_filter: RecordFilter, limit: int | None,
    follow: bool, timeout: float | None,
) -> Iterator[Any]:
    """Yields the records that pass the filter, in order per partition.

    Without ``follow`` it stops once every partition reached its end; with it, it waits for
    new records. Either way it stops after ``limit`` records or ``timeout`` seconds.
    """
    if not starts or limit == 0:
        return
    consumer = probe_consumer(target.bootstrap, "peek", fetch_wait_ms=500 if follow else 10)
    at_end: set[TP] = set()
    yielded = 0
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in starts.items()])
        while deadline is None or time.monotonic() < deadline:
            if not follow and len(at_end) == len(starts):
                return
            batch: list[Any] = consumer.consume(200, 0.2 if follow else 0.05)  # waits all of it unless full
            for msg in batch:
                tp = (msg.topic(), msg.partition())
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        at_end.add(tp)
                    continue
                if record_filter.matches(msg, topic):
                    yield msg
                    yielded += 1
                    if limit is not None and yielded >= limit:
                        return
    finally:
        consumer.close()
