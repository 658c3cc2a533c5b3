"""Start positions and filters of peek and tail."""

from __future__ import annotations

import pytest

from cli.topics.reader import BadStart, parse_time, partitions_to_read
from libs.common.kafka.partitioner import partition_for


def test_times_are_iso_or_durations_ago() -> None:
    assert parse_time("2024-01-02T03:04:05Z") == 1_704_164_645_000
    assert parse_time("2024-01-02T03:04:05") == 1_704_164_645_000  # UTC unless it says
    assert parse_time("2024-01-02T04:04:05+01:00") == 1_704_164_645_000
    assert parse_time("15m", now=10_000.0) == (10_000 - 900) * 1000
    assert parse_time("1d", now=100_000.0) == (100_000 - 86_400) * 1000
    with pytest.raises(BadStart):
        parse_time("yesterday")


def test_a_key_reads_only_its_partition() -> None:
    assert partitions_to_read(12, None, None) == list(range(12))
    assert partitions_to_read(12, 3, "a.test") == [3]
    assert partitions_to_read(12, None, "a.test") == [partition_for("a.test", 12)]
    with pytest.raises(BadStart):
        partitions_to_read(12, 12, None)
