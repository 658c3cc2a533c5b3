"""The producer's partitioner agrees with :func:`partition_for` on a real broker."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from libs.common.kafka.partitioner import partition_for
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_REQUESTS
from libs.common.wire import messages as pb
from libs.localinfra import create_topics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

PARTITIONS = 7


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 20.0) -> dict[str, int]:
    """key -> partition of every message of ``topic``, read by assignment (no group join)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                partition = msg.partition()
                if msg.error() is None and partition is not None:
                    seen[(msg.key() or b"").decode()] = partition
    finally:
        consumer.close()
    return seen


async def test_each_key_lands_in_its_murmur2_partition(kafka_bootstrap: str,
                                                        unique_name: Callable[[str], str]) -> None:
    # A topic of its own partition count, not the declared one: the producer must not insist on the declaration.
    settings = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".", ensure_topics=False)
    topic = settings.topic(FETCH_REQUESTS.name)
    create_topics(kafka_bootstrap, [(topic, PARTITIONS)])
    keys = [f"host-{i}.test" for i in range(200)] + ["", "caf\u00e9.test", "21", "foobar"]

    producer = TopicProducer(settings, "partitioner-test")
    await producer.start()
    try:
        for key in keys:
            producer.send(FETCH_REQUESTS, key, pb.FetchRequest(url=f"http://{key}/", host=key))
        await producer.flush()
    finally:
        await producer.stop()

    landed = _read_all(kafka_bootstrap, topic, PARTITIONS, len(keys))
    assert set(landed) == set(keys)
    wrong = {key: (part, partition_for(key, PARTITIONS)) for key, part in landed.items()
             if part != partition_for(key, PARTITIONS)}
    assert wrong == {}
    assert set(landed.values()) == set(range(PARTITIONS))
