"""The topics on a Kafka: partitions, message counts and sizes, and how they match the declarations.

Counts are offset ranges (end minus low watermark), so on a compacted or transactional
topic they count gaps too. The end of each partition is read from the data (see
:mod:`libs.common.kafka.ends`). Kafka's client API has no call that reports bytes on
disk, so sizes are estimated: the newest ``sample`` records of each partition are read
(key plus value bytes) and their mean size is multiplied by the partition's count.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from cli.topics.target import Target
from libs.common.kafka.ends import TP, read_to_end, watermarks


@dataclass
class PartitionSummary:
    partition: int
    low: int
    reported_high: int
    end: int
    end_verified: bool
    sampled: int = 0
    sampled_bytes: int = 0

    @property
    def messages(self) -> int:
        return max(0, self.end - self.low)

    @property
    def estimated_bytes(self) -> int:
        return 0 if not self.sampled else round(self.sampled_bytes / self.sampled * self.messages)


@dataclass
class TopicSummary:
    name: str
    declared_as: str | None  # the declared topic's name, None for topics Trawl does not declare
    message_type: str | None
    key: str | None
    declared_partitions: int | None
    partitions: list[PartitionSummary] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.partitions)

    @property
    def estimated_bytes(self) -> int:
        return sum(p.estimated_bytes for p in self.partitions)

    @property
    def corrected(self) -> int:
        """Partitions whose data goes past the high watermark the broker reported."""
        return sum(p.end != p.reported_high for p in self.partitions)

    @property
    def unverified(self) -> int:
        return sum(not p.end_verified for p in self.partitions)

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.name, "declared_as": self.declared_as, "message_type": self.message_type,
            "key": self.key, "partitions": len(self.partitions), "declared_partitions": self.declared_partitions,
            "messages": self.messages, "estimated_bytes": self.estimated_bytes,
            "partition_detail": [
                {"partition": p.partition, "low": p.low, "reported_high": p.reported_high, "end": p.end,
                 "end_verified": p.end_verified, "messages": p.messages, "estimated_bytes": p.estimated_bytes,
                 "sampled": p.sampled}
                for p in self.partitions
            ],
        }


def topic_names(target: Target, timeout: float, include_internal: bool = False) -> dict[str, int]:
    """Name -> partition count of every topic on the broker (internal ``__*`` topics on request)."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "log_level": 0})
    metadata = admin.list_topics(timeout=timeout)
    return {
        name: len(topic.partitions)
        for name, topic in sorted(metadata.topics.items())
        if topic.error is None and (include_internal or not name.startswith("__"))
    }


def summarize(
    target: Target, *, sample: int = 20, timeout: float = 15.0, only_declared: bool = False,
    include_internal: bool = False,
) -> list[TopicSummary]:
    counts = topic_names(target, timeout, include_internal)
    summaries: dict[str, TopicSummary] = {}
    for name in counts:
        declared = target.declared(name)
        if only_declared and declared is None:
            continue
        summaries[name] = TopicSummary(
            name, declared.name if declared else None,
            declared.message_type.DESCRIPTOR.name if declared else None,
            declared.key if declared else None, declared.partitions if declared else None,
        )
    tps: list[TP] = [(name, p) for name in summaries for p in range(counts[name])]
    marks = watermarks(target.bootstrap, tps, timeout)
    sizes: dict[TP, list[int]] = defaultdict(lambda: [0, 0])

    def measure(msg: Any) -> None:
        entry = sizes[(msg.topic(), msg.partition())]
        entry[0] += 1
        entry[1] += len(msg.key() or b"") + len(msg.value() or b"")

    # Start ``sample`` records before the reported end: the read measures the newest records
    # and, on a broker that reports a too-low watermark, goes on to the true end.
    starts = {tp: max(low, high - sample) for tp, (low, high) in marks.items()}
    ends = read_to_end(target.bootstrap, starts, timeout=timeout, on_message=measure, purpose="inventory")
    for (name, partition), (low, high) in sorted(marks.items()):
        end = ends.get((name, partition))
        taken, total = sizes.get((name, partition), (0, 0))
        summaries[name].partitions.append(PartitionSummary(
            partition, low, high, high if end is None else max(end, high), end is not None, taken, total))
    return list(summaries.values())
