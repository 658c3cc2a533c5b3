"""Consumer lag per group and partition: the partition's end minus the group's committed offset.

Ends are checked against the data (:mod:`libs.common.kafka.ends`), because some brokers
(Tansu) report a high watermark that is too low after batched produces. Should the end
still come out below the committed offset (an end that could not be checked in time), the
lag is clamped to zero and flagged ``clamped``: never shown as negative.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from libs.common.kafka.ends import TP, PartitionEnd, partition_ends


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int  # -1: nothing committed
    high_watermark: int  # the end the lag is measured from
    lag: int
    clamped: bool
    end_verified: bool = False  # the end was read from the data, not only taken from the broker


def topic_partitions(admin: AdminClient, topics: Iterable[str], timeout: float) -> list[TP]:
    """Every partition of the named topics that exist."""
    metadata = admin.list_topics(timeout=timeout)
    return [(t, p) for t in sorted(set(topics)) if t in metadata.topics for p in sorted(metadata.topics[t].partitions)]


def committed_offsets(
    admin: AdminClient, group: str, partitions: Iterable[TP] | None, timeout: float
) -> dict[TP, int]:
    """The group's committed offset of each partition (-1: none); ``None``: every partition it committed."""
    wanted = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    if wanted == []:
        return {}
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, wanted)])[group]
    # The broker reports "nothing committed" as OFFSET_INVALID (-1001).
    return {(tp.topic, tp.partition): max(tp.offset, -1) for tp in future.result(timeout).topic_partitions}


def lag_of(group: str, end: PartitionEnd, committed: int) -> PartitionLag:
    """Lag of one partition: nothing committed counts from the partition's first offset."""
    raw = end.high - (committed if committed >= 0 else end.low)
    return PartitionLag(group, end.topic, end.partition, committed, end.high, max(raw, 0), raw < 0, end.verified)


def group_lag(
    bootstrap: str, group: str, topics: list[str], timeout: float = 5.0, verify_ends: bool = True
) -> list[PartitionLag]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    partitions = topic_partitions(admin, topics, timeout)
    if not partitions:
        return []
    committed = committed_offsets(admin, group, partitions, timeout)
    ends = partition_ends(bootstrap, partitions, timeout=timeout, verify=verify_ends)
    return [lag_of(group, ends[tp], committed.get(tp, -1)) for tp in partitions]
