"""Consumer lag per group and partition, computed from committed offsets and high watermarks.

Some brokers (Tansu) report a high watermark that is too low after batched produces, so
lag can come out negative: it is clamped to zero and flagged, never shown as negative.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int  # -1: nothing committed
    high_watermark: int
    lag: int
    clamped: bool


def group_lag(bootstrap: str, group: str, topics: list[str], timeout: float = 5.0) -> list[PartitionLag]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=timeout)
    partitions = [
        TopicPartition(t, p) for t in topics if t in metadata.topics for p in sorted(metadata.topics[t].partitions)
    ]
    if not partitions:
        return []
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)])[group]
    committed = {(tp.topic, tp.partition): tp.offset for tp in future.result(timeout).topic_partitions}
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{group}-lag-probe", "enable.auto.commit": False})
    try:
        out = []
        for tp in partitions:
            _low, high = probe.get_watermark_offsets(tp, timeout=timeout, cached=False)
            done = committed.get((tp.topic, tp.partition), -1)
            done = max(done, -1)  # the broker reports "nothing committed" as OFFSET_INVALID (-1001)
            raw = high - max(done, 0)
            out.append(PartitionLag(group, tp.topic, tp.partition, done, high, max(raw, 0), raw < 0))
        return out
    finally:
        probe.close()
