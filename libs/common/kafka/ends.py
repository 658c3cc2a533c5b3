"""Where each partition begins and ends, checked against the data when asked.

``ListOffsets`` gives a partition's low and high watermark. Some brokers report a high
watermark that is too low: Tansu answers the first offset of the last batch + 1 after a
batched produce, although its fetch responses carry the right one. With ``verify=True``
each partition is read from its reported high watermark until the consumer reports the
end of the partition; on a broker that reports correctly that reads nothing, on Tansu it
reads at most the rest of the last batch and finds the true end. A partition whose end
is not reached within the timeout keeps its reported watermark, marked unverified.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec  # not re-exported for type checkers

TP = tuple[str, int]
OnMessage = Callable[[Any], None]


@dataclass(frozen=True)
class PartitionEnd:
    topic: str
    partition: int
    low: int
    reported_high: int
    high: int  # the end: checked against the data when ``verified``, else as reported
    verified: bool

    @property
    def corrected(self) -> bool:
        """The broker's high watermark was wrong (the data goes further)."""
        return self.high != self.reported_high

    @property
    def messages(self) -> int:
        """Offsets between the low watermark and the end (records, plus any gaps)."""
        return max(0, self.high - self.low)


def probe_consumer(bootstrap: str, purpose: str, fetch_wait_ms: int = 10) -> Consumer:
    """A consumer for reading by assignment only: it joins no group and never commits.

    At the end of a partition the broker holds a fetch for ``fetch_wait_ms`` before it
    answers that there is nothing more: short for reads that stop at the end, longer for
    reads that wait for new records.
    """
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"trawl-ops-{purpose}",  # required by librdkafka; unused without subscribe/commit
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "latest",  # a start past the end goes to the end, never back to the start
        "fetch.wait.max.ms": fetch_wait_ms,
        "log_level": 0,
    })


def read_to_end(
    bootstrap: str,
    starts: Mapping[TP, int],
    *,
    timeout: float,
    on_message: OnMessage | None = None,
    purpose: str = "ends",
) -> dict[TP, int]:
    """Reads every partition of ``starts`` from its start offset to its end.

    Returns the end offset of each partition whose end was reached within ``timeout``
    (the offset the consumer reported end-of-partition at, or past the last record read).
    ``on_message`` sees every record read, in order per partition.
    """
    if not starts:
        return {}
    consumer = probe_consumer(bootstrap, purpose)
    ends: dict[TP, int] = {}
    furthest: dict[TP, int] = {}
    try:
        consumer.assign([TopicPartition(t, p, max(0, offset)) for (t, p), offset in starts.items()])
        deadline = time.monotonic() + timeout
        while len(ends) < len(starts) and time.monotonic() < deadline:
            # consume() waits its whole timeout unless the batch fills: keep it short.
            batch: list[Any] = consumer.consume(500, min(0.05, max(0.01, deadline - time.monotonic())))
            for msg in batch:
                tp = (msg.topic(), msg.partition())
                if tp in ends:
                    continue  # fetched before the pause took effect: past the end we report
                err = msg.error()
                if err is None:
                    furthest[tp] = msg.offset() + 1
                    if on_message is not None:
                        on_message(msg)
                elif err.code() == KafkaError._PARTITION_EOF:
                    ends[tp] = max(msg.offset(), furthest.get(tp, 0))
                    consumer.pause([TopicPartition(*tp)])
    finally:
        consumer.close()
    return ends


def watermarks(bootstrap: str, partitions: Iterable[TP], timeout: float) -> dict[TP, tuple[int, int]]:
    """(low, high) watermark of each partition as the broker reports them (two batched requests)."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    found: dict[TP, list[int]] = {tp: [0, 0] for tp in wanted}
    specs = (OffsetSpec.earliest(), OffsetSpec.latest())  # type: ignore[no-untyped-call]  # untyped in the library
    for index, spec in enumerate(specs):
        futures = admin.list_offsets({TopicPartition(*tp): spec for tp in wanted}, request_timeout=timeout)
        for tp, future in futures.items():
            found[(tp.topic, tp.partition)][index] = future.result(timeout).offset
    return {tp: (low, high) for tp, (low, high) in found.items()}


def partition_ends(
    bootstrap: str, partitions: Iterable[TP], *, timeout: float = 10.0, verify: bool = True
) -> dict[TP, PartitionEnd]:
    """Low watermark and end of each partition; see the module docstring for ``verify``."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    marks = watermarks(bootstrap, wanted, timeout)
    found = read_to_end(bootstrap, {tp: high for tp, (_low, high) in marks.items()}, timeout=timeout) if verify else {}
    out = {}
    for tp, (low, high) in marks.items():
        end = found.get(tp)
        out[tp] = PartitionEnd(tp[0], tp[1], low, high, high if end is None else max(end, high), end is not None)
    return out


def offsets_since(bootstrap: str, partitions: list[tuple[str, int]], since_ms: int, timeout: float,
                  client: str) -> dict[tuple[str, int], int]:
    """Per (topic, partition), the first offset at or after ``since_ms``; the end where nothing is that recent."""
    consumer = probe_consumer(bootstrap, client)
    try:
        found = consumer.offsets_for_times([TopicPartition(t, p, since_ms) for t, p in partitions], timeout=timeout)
    finally:
        consumer.close()
    starts = {(tp.topic, tp.partition): tp.offset for tp in found}
    past_end = [tp for tp, offset in starts.items() if offset < 0]
    if past_end:
        for tp, (_low, high) in watermarks(bootstrap, past_end, timeout).items():
            starts[tp] = high
    return starts
