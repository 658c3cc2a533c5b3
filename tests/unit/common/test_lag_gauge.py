"""LagGauge: trawl_consumer_lag from librdkafka's statistics JSON, clamped, and dropped on revoke."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import REGISTRY

from libs.common.kafka.lag_gauge import LagGauge, partition_lags


def part(desired: bool, hi: int, committed: int = -1001, position: int = -1001) -> dict[str, Any]:
    return {"desired": desired, "hi_offset": hi, "committed_offset": committed, "app_offset": position}


def stats(partitions: dict[str, dict[str, Any]], topic: str = "pre.trawl.documents") -> str:
    return json.dumps({"name": "c", "topics": {topic: {"partitions": partitions}}})


def lag(service: str, partition: int) -> float | None:
    return REGISTRY.get_sample_value(
        "trawl_consumer_lag", {"service": service, "topic": "trawl.documents", "partition": str(partition)}
    )


def test_lag_counts_from_the_commit_or_before_it_from_the_position() -> None:
    lags = partition_lags(json.loads(stats({
        "0": part(True, hi=10, committed=4, position=10),
        "1": part(True, hi=3, position=1),
        "2": part(False, hi=50, committed=1),  # another member's partition
        "3": part(True, hi=-1001),  # nothing fetched yet: unknown, not zero
        "-1": part(False, hi=-1001),  # librdkafka's internal partition
    })))
    assert lags == {("pre.trawl.documents", 0): 6, ("pre.trawl.documents", 1): 2}


def test_gauge_labels_by_declared_topic_clamps_and_forgets_revoked_partitions() -> None:
    gauge = LagGauge("lag-test", {"pre.trawl.documents": "trawl.documents"})
    clamped = {"service": "lag-test", "topic": "trawl.documents"}
    before = REGISTRY.get_sample_value("trawl_consumer_lag_clamped_total", clamped) or 0.0

    gauge(stats({"0": part(True, hi=10, committed=4), "1": part(True, hi=2, committed=5)}))
    assert lag("lag-test", 0) == 6
    assert lag("lag-test", 1) == 0  # a watermark below the commit: shown as 0, counted
    assert REGISTRY.get_sample_value("trawl_consumer_lag_clamped_total", clamped) == before + 1

    gauge(stats({"0": part(False, hi=10, committed=4), "1": part(True, hi=9, committed=5)}))
    assert lag("lag-test", 0) is None  # revoked: another pod reports it now
    assert lag("lag-test", 1) == 4


def test_unreadable_statistics_change_nothing() -> None:
    gauge = LagGauge("lag-test-bad", {})
    gauge("{not json")
    gauge(json.dumps({"topics": {"t": {"partitions": {"0": part(True, hi=5, committed=1)}}}}))
    assert REGISTRY.get_sample_value(
        "trawl_consumer_lag", {"service": "lag-test-bad", "topic": "t", "partition": "0"}) == 4
