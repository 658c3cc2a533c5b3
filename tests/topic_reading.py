"""Reading a topic from its beginning without a consumer group, for tests that check what a service sent."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition


def first_messages(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 30.0) -> list[Message]:
    """The first ``count`` messages found on the ``partitions`` partitions of ``topic`` (fewer after ``timeout``)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = reader.poll(0.2)
            if message is not None and not message.error():
                found.append(message)
    finally:
        reader.close()
    return found
