"""TopicProducer and TopicConsumer on the real broker: round trips, a handler per topic, dead letters, retries,
commits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from libs.common.errors import PoisonMessage, RetryableError
from libs.common.kafka.consumer import Record, TopicConsumer, TopicHandler
from libs.common.kafka.lag import group_lag
from libs.common.kafka.partitioner import partition_for
from libs.common.kafka.producer import MessageTooLarge, TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import ALL_TOPICS, DEAD_LETTERS, FETCH_REQUESTS, FETCH_RESULTS, Topic
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from tests.conftest import running_producer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Handler = Callable[[Sequence[Record[Any]]], Awaitable[None]]


def filled(message_type: type[Message], n: int = 1) -> Message:
    """A message with every field (nested ones too) set to a non-default value."""
    message = message_type()
    for field in message_type.DESCRIPTOR.fields:
        # The C implementation's descriptors at run time; they pass for the Python classes.
        assert isinstance(field, FieldDescriptor)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            assert isinstance(field.message_type, Descriptor)
            children = [filled(GetMessageClass(field.message_type), n + i) for i in range(2)]
            if field.is_repeated:
                getattr(message, field.name).extend(children)
            else:
                getattr(message, field.name).CopyFrom(children[0])
            continue
        if field.type == FieldDescriptor.TYPE_STRING:
            values: list[Any] = [f"{field.name}-{n}", f"{field.name}-{n + 1}-\u00e9"]
        elif field.type == FieldDescriptor.TYPE_BYTES:
            values = [b"\x00\xff" + field.name.encode(), b"\x01"]
        elif field.type == FieldDescriptor.TYPE_BOOL:
            values = [True, False]
        elif field.type == FieldDescriptor.TYPE_DOUBLE:
            values = [n + 0.25, -1.5]
        elif field.type == FieldDescriptor.TYPE_ENUM:
            assert isinstance(field.enum_type, EnumDescriptor)
            values = [field.enum_type.values[-1].number, 1]
        elif field.type == FieldDescriptor.TYPE_INT64:
            values = [1_700_000_000_000 + n, 7]
        else:
            values = [1000 + n, 3]
        if field.is_repeated:
            getattr(message, field.name).extend(values)
        else:
            setattr(message, field.name, values[0])
    return message


class Collector:
    """A batch handler that records what it processed and wakes waiters."""

    def __init__(self, fail: Callable[[Record[Any]], None] | None = None) -> None:
        self.records: list[Record[Any]] = []
        self.calls = 0
        self._fail = fail
        self._changed = asyncio.Event()

    async def __call__(self, records: Sequence[Record[Any]]) -> None:
        self.calls += 1
        for record in records:
            if self._fail is not None:
                self._fail(record)
        self.records.extend(records)
        self._changed.set()

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Record[Any]]:
        deadline = time.monotonic() + timeout
        while len(self.records) < count:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                break
        return self.records


@pytest.fixture
def kafka(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> KafkaSettings:
    return KafkaSettings(
        bootstrap=kafka_bootstrap,
        topic_prefix=unique_name("t") + ".",
        session_timeout_ms=3000,
        heartbeat_interval_ms=500,
        max_attempts=3,
    )


def _create(kafka: KafkaSettings, *topics: Topic) -> None:
    create_topics(kafka.bootstrap, [(kafka.topic(t.name), t.partitions) for t in topics])


@asynccontextmanager
async def _consuming(
    kafka: KafkaSettings, group: str, topics: list[Topic], handler: Handler, producer: TopicProducer, **options: Any
) -> AsyncIterator[TopicConsumer]:
    """A consumer of ``topics`` that hands every topic's records to ``handler``."""
    consumer = TopicConsumer(kafka, service="roundtrip", group_id=group,
                             handlers=[TopicHandler(t, handler) for t in topics], producer=producer,
                             retry_backoff=0.01, **options)
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop(drain_timeout=10.0)


def _read_dead_letters(kafka: KafkaSettings, expected: int, timeout: float = 20.0) -> list[tuple[str, pb.DeadLetter]]:
    topic = kafka.topic(DEAD_LETTERS.name)
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"{topic}-reader",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(DEAD_LETTERS.partitions)])
    letters: list[tuple[str, pb.DeadLetter]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(letters) < expected and time.monotonic() < deadline:
            for msg in reader.consume(100, 0.2):
                if msg.error() is None:
                    letter = pb.DeadLetter()
                    letter.ParseFromString(msg.value() or b"")
                    letters.append(((msg.key() or b"").decode(), letter))
        # anything beyond the expected letters would arrive with them
        letters += [((m.key() or b"").decode(), pb.DeadLetter.FromString(m.value() or b""))
                    for m in reader.consume(100, 0.5) if m.error() is None]
    finally:
        reader.close()
    return letters


async def _assert_nothing_redelivered(kafka: KafkaSettings, group: str, topic: Topic, key: str,
                                      marker: Message) -> None:
    """A new member of ``group`` receives only a message produced after it joined, nothing older."""
    collector = Collector()
    async with running_producer(kafka, "restart") as producer:
        async with _consuming(kafka, group, [topic], collector, producer):
            producer.send(topic, key, marker)
            await producer.flush()
            await collector.wait_for(1)
            await asyncio.sleep(0.5)  # time for any redelivered record to show up too
    assert [r.value for r in collector.records] == [marker]


# -- round trip of every message type ----------------------------------------------------------------


async def test_every_topic_round_trips_through_one_consumer(kafka: KafkaSettings,
                                                            unique_name: Callable[[str], str]) -> None:
    _create(kafka, *ALL_TOPICS)
    sent = {topic.name: (f"key-{topic.name}-\u00e9", filled(topic.message_type)) for topic in ALL_TOPICS}
    collector = Collector()
    async with running_producer(kafka, "roundtrip") as producer:
        for topic in ALL_TOPICS:
            key, message = sent[topic.name]
            producer.send(topic, key, message)
        await producer.flush()
        assert producer.sent == len(ALL_TOPICS)
        async with _consuming(kafka, unique_name("g"), list(ALL_TOPICS), collector, producer,
                              batch_size=100) as consumer:
            await collector.wait_for(len(ALL_TOPICS))
            assert consumer.dead_letters == 0
            assert consumer.processed == len(ALL_TOPICS)
            assert consumer.assigned_partitions(FETCH_REQUESTS) == set(range(FETCH_REQUESTS.partitions))

    received = {r.topic.name: (r.key, r.value) for r in collector.records}
    assert len(collector.records) == len(ALL_TOPICS)
    assert received == sent
    for record in collector.records:
        assert type(record.value) is record.topic.message_type
        assert record.partition == partition_for(record.key, record.topic.partitions)
        assert record.raw_key == record.key.encode()
        assert record.raw_value == record.value.SerializeToString()
        assert record.timestamp_ms > 0


async def test_each_topic_s_records_go_to_its_own_handler_and_a_poison_stays_in_its_topic(
    kafka: KafkaSettings, unique_name: Callable[[str], str]
) -> None:
    """One consumer, two topics: each handler gets batches of its own topic only, in partition order; a
    poison in one topic is dead-lettered alone, and both topics are committed."""
    _create(kafka, FETCH_REQUESTS, FETCH_RESULTS, DEAD_LETTERS)
    group = unique_name("g")

    def fail(record: Record[Any]) -> None:
        if record.value.request_id == "poison":
            raise PoisonMessage("bad result")

    requests, results = Collector(), Collector(fail)
    async with running_producer(kafka, "roundtrip") as producer:
        for i in range(4):
            producer.send(FETCH_REQUESTS, "h.test", pb.FetchRequest(url=f"http://h.test/{i}", request_id=str(i)))
            producer.send(FETCH_RESULTS, "h.test", pb.FetchResult(request_id="poison" if i == 2 else str(i)))
        await producer.flush()
        handlers: list[TopicHandler[Any]] = [TopicHandler(FETCH_REQUESTS, requests),
                                             TopicHandler(FETCH_RESULTS, results)]
        consumer = TopicConsumer(kafka, service="roundtrip", group_id=group, handlers=handlers, producer=producer,
                                 retry_backoff=0.01)
        await consumer.start()
        try:
            await requests.wait_for(4)
            await results.wait_for(3)
            assert consumer.dead_letters == 1
        finally:
            await consumer.stop(drain_timeout=10.0)

    assert [r.value.request_id for r in requests.records] == ["0", "1", "2", "3"]
    assert [r.value.request_id for r in results.records] == ["0", "1", "3"]
    assert all(r.topic is FETCH_REQUESTS and type(r.value) is pb.FetchRequest for r in requests.records)
    assert all(r.topic is FETCH_RESULTS and type(r.value) is pb.FetchResult for r in results.records)
    (_, letter), = _read_dead_letters(kafka, 1)
    assert letter.source_topic == kafka.topic(FETCH_RESULTS.name) and letter.error == "PoisonMessage: bad result"
    topics = [kafka.topic(FETCH_REQUESTS.name), kafka.topic(FETCH_RESULTS.name)]
    lags = [lag for lag in group_lag(kafka.bootstrap, group, topics) if lag.committed >= 0]
    assert sorted((lag.topic, lag.committed, lag.lag) for lag in lags) == [(topics[0], 4, 0), (topics[1], 4, 0)]


# -- dead letters, retries and commits in batch mode ----------------------------------------------------


async def test_poison_goes_to_dead_letters_and_good_messages_are_processed_and_committed(
    kafka: KafkaSettings, unique_name: Callable[[str], str]
) -> None:
    _create(kafka, FETCH_REQUESTS, DEAD_LETTERS)
    topic_name = kafka.topic(FETCH_REQUESTS.name)
    group = unique_name("g")
    host = "h.test"
    flaky_attempts = 0

    def fail(record: Record[Any]) -> None:
        nonlocal flaky_attempts
        if record.value.url == "http://h.test/poison":
            raise PoisonMessage("no such scheme")
        if record.value.url == "http://h.test/flaky":
            flaky_attempts += 1
            if flaky_attempts <= 5:  # more failures than max_attempts: only transient ones may be retried this long
                raise RetryableError("database is down")

    def request(path: str) -> pb.FetchRequest:
        return pb.FetchRequest(url=f"http://h.test/{path}", host=host)

    collector = Collector(fail)
    garbage = b"\xff\xff\xff\xff"
    async with running_producer(kafka, "roundtrip") as producer:
        producer.send(FETCH_REQUESTS, host, request("good-1"))  # offset 0
        producer.send_raw(topic_name, host.encode(), garbage)  # offset 1
        producer.send(FETCH_REQUESTS, host, request("poison"))  # offset 2
        producer.send(FETCH_REQUESTS, host, request("flaky"))  # offset 3
        producer.send(FETCH_REQUESTS, host, request("good-2"))  # offset 4
        await producer.flush()
        async with _consuming(kafka, group, [FETCH_REQUESTS], collector, producer) as consumer:
            await collector.wait_for(3)
            assert consumer.dead_letters == 2

    assert [r.value.url for r in collector.records] == [
        "http://h.test/good-1", "http://h.test/flaky", "http://h.test/good-2"
    ]
    assert [r.offset for r in collector.records] == [0, 3, 4]
    assert flaky_attempts == 6

    partition = partition_for(host, FETCH_REQUESTS.partitions)
    letters = _read_dead_letters(kafka, 2)
    assert [key for key, _ in letters] == [host, host]
    (_, undecodable), (_, poison) = letters
    assert (undecodable.source_topic, undecodable.source_partition, undecodable.source_offset) == (
        topic_name, partition, 1)
    assert undecodable.value == garbage
    assert undecodable.key == host.encode()
    assert "not a FetchRequest" in undecodable.error
    assert undecodable.service == "roundtrip"
    assert (poison.source_topic, poison.source_partition, poison.source_offset) == (topic_name, partition, 2)
    assert poison.error == "PoisonMessage: no such scheme"
    assert pb.FetchRequest.FromString(poison.value).url == "http://h.test/poison"
    assert poison.attempts == kafka.max_attempts
    assert poison.failed_at_ms > 0

    lags = {lag.partition: lag for lag in group_lag(kafka.bootstrap, group, [topic_name])}
    assert lags[partition].committed == 5
    assert lags[partition].lag == 0
    assert {p: lag.committed for p, lag in lags.items() if p != partition} == dict.fromkeys(
        set(range(FETCH_REQUESTS.partitions)) - {partition}, -1)

    await _assert_nothing_redelivered(kafka, group, FETCH_REQUESTS, host, request("after-restart"))


async def test_batch_wait_hands_over_the_records_that_came_without_waiting_for_a_full_batch(
    kafka: KafkaSettings, unique_name: Callable[[str], str]
) -> None:
    """With ``batch_wait``, a batch of 500 that will not fill is handed over once its records came, not
    after ``poll_timeout`` (12 s here: without the wait they would come after the 6 s allowed); a stop
    ends the poll at once."""
    _create(kafka, FETCH_RESULTS, DEAD_LETTERS)
    collector = Collector()
    async with running_producer(kafka, "roundtrip") as producer:
        async with _consuming(kafka, unique_name("g"), [FETCH_RESULTS], collector, producer, batch_size=500,
                              poll_timeout=12.0, batch_wait=0.05) as consumer:
            assert consumer.batch_wait == 0.05
            deadline = time.monotonic() + 20
            while not consumer.assigned_partitions(FETCH_RESULTS) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert consumer.assigned_partitions(FETCH_RESULTS) == set(range(FETCH_RESULTS.partitions))
            for i in range(5):
                producer.send(FETCH_RESULTS, "host-0.test", pb.FetchResult(request_id=str(i)))
            await producer.flush()
            records = await collector.wait_for(5, timeout=6.0)
            assert [r.value.request_id for r in records] == [str(i) for i in range(5)]
            await asyncio.sleep(0.5)  # the consumer is back in a poll, waiting for more
            stopping = time.monotonic()
            await consumer.stop()  # the poll ends at the stop, not after 12 s
            assert time.monotonic() - stopping < 6.0


# -- producer limits ---------------------------------------------------------------------------------


async def test_a_message_too_large_is_refused_before_it_is_sent(kafka_bootstrap: str,
                                                                unique_name: Callable[[str], str]) -> None:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".", max_message_bytes=1000)
    _create(kafka, FETCH_RESULTS)
    async with running_producer(kafka, "roundtrip") as producer:
        with pytest.raises(MessageTooLarge, match="1000"):
            producer.send(FETCH_RESULTS, "a.test", pb.FetchResult(body=b"x" * 1001))
        with pytest.raises(MessageTooLarge):
            producer.send_raw(kafka.topic(FETCH_RESULTS.name), b"a.test", b"x" * 1001)
        with pytest.raises(TypeError, match="FetchResult"):
            producer.send(FETCH_RESULTS, "a.test", pb.Document())
        assert producer.sent == 0
        producer.send(FETCH_RESULTS, "a.test", pb.FetchResult(body=b"x" * 900))
        await producer.flush()
        assert producer.sent == 1
