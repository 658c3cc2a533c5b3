"""The fetcher's consumer mode on the real broker: one task per record, within its slots; full slots pause.

Fetch results stand in for the requests (any topic will do: the mode does not read the messages).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from libs.common.kafka.consumer import Record, TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import DEAD_LETTERS, FETCH_RESULTS
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.fetcher.partitions.in_hand_consumer import InHandConsumer
from tests.conftest import running_producer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def kafka(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> KafkaSettings:
    return KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".", session_timeout_ms=3000,
                         heartbeat_interval_ms=500, max_attempts=3)


def _create(kafka: KafkaSettings) -> None:
    create_topics(kafka.bootstrap, [(kafka.topic(t.name), t.partitions) for t in (FETCH_RESULTS, DEAD_LETTERS)])


@asynccontextmanager
async def _consuming(
    kafka: KafkaSettings, group: str, handle: Callable[[Sequence[Record[pb.FetchResult]]], Any],
    producer: TopicProducer, **options: Any,
) -> AsyncIterator[InHandConsumer]:
    consumer = InHandConsumer(kafka, service="in-hand", group_id=group, handlers=[TopicHandler(FETCH_RESULTS, handle)],
                              producer=producer, retry_backoff=0.01, **options)
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop(drain_timeout=10.0)


async def _assert_nothing_redelivered(kafka: KafkaSettings, group: str, key: str, marker: pb.FetchResult) -> None:
    """A new member of ``group`` receives only a message produced after it joined, nothing older."""
    seen: list[pb.FetchResult] = []

    async def handle(records: Sequence[Record[pb.FetchResult]]) -> None:
        seen.extend(r.value for r in records)

    async with running_producer(kafka, "in-hand") as producer:
        async with _consuming(kafka, group, handle, producer, slots=4):
            producer.send(FETCH_RESULTS, key, marker)
            await producer.flush()
            deadline = time.monotonic() + 20
            while not seen and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # time for any redelivered record to show up too
    assert seen == [marker]


async def test_records_are_handled_one_task_each_within_the_slots_and_committed(
    kafka: KafkaSettings, unique_name: Callable[[str], str]
) -> None:
    _create(kafka)
    group = unique_name("g")
    count = 32
    done: list[str] = []
    running = 0
    most_running = 0

    async def handle(records: Sequence[Record[pb.FetchResult]]) -> None:
        nonlocal running, most_running
        assert len(records) == 1  # one task per record
        running += 1
        most_running = max(most_running, running)
        try:
            # longer than the poll timeout, so that full slots pause the partitions; uneven, so that
            # records finish out of order
            await asyncio.sleep(0.25 + 0.02 * (int(records[0].value.request_id) % 4))
            done.append(records[0].value.request_id)
        finally:
            running -= 1

    async with running_producer(kafka, "in-hand") as producer:
        for i in range(count):
            producer.send(FETCH_RESULTS, f"host-{i % 9}.test", pb.FetchResult(request_id=str(i)))
        await producer.flush()
        async with _consuming(kafka, group, handle, producer, slots=8) as consumer:
            deadline = time.monotonic() + 20
            while len(done) < count and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert consumer.processed == count

    assert sorted(done, key=int) == [str(i) for i in range(count)]
    assert done != sorted(done, key=int)  # really concurrent: records finished out of order
    assert most_running == 8  # every slot used, none beyond
    await _assert_nothing_redelivered(kafka, group, "host-0.test", pb.FetchResult(request_id="new"))


@pytest.mark.parametrize("pause_after", [5.0, 0.05])
async def test_full_slots_pause_the_partitions_only_after_pause_after(
    kafka: KafkaSettings, unique_name: Callable[[str], str], pause_after: float
) -> None:
    """Slots that stay taken longer than ``pause_after`` pause the partitions (and resume them); until
    then the consumer waits for a slot with the records fetched ahead kept. Either way every record is
    handled once and committed."""
    _create(kafka)
    group = unique_name("g")
    count = 12
    done: list[str] = []

    async def handle(records: Sequence[Record[pb.FetchResult]]) -> None:
        await asyncio.sleep(0.3)  # longer than the poll timeout: the slots stay full between polls
        done.append(records[0].value.request_id)

    async with running_producer(kafka, "in-hand") as producer:
        for i in range(count):
            producer.send(FETCH_RESULTS, f"host-{i % 5}.test", pb.FetchResult(request_id=str(i)))
        await producer.flush()
        async with _consuming(kafka, group, handle, producer, slots=3,
                              pause_after=pause_after) as consumer:
            deadline = time.monotonic() + 30
            while len(done) < count and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert consumer.processed == count
            pauses = consumer.pauses

    assert sorted(done, key=int) == [str(i) for i in range(count)]
    if pause_after > 1:
        assert pauses == 0  # every slot freed within pause_after: never paused
    else:
        assert pauses >= 1
    await _assert_nothing_redelivered(kafka, group, "host-0.test", pb.FetchResult(request_id="new"))
