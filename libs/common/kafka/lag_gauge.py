"""Exports a consumer's lag to Prometheus from librdkafka's statistics.

librdkafka emits a statistics JSON every ``statistics.interval.ms`` from the thread that
polls; :class:`LagGauge` is its ``stats_cb``. For every partition this member owns it sets
``trawl_consumer_lag{service, topic, partition}`` to the partition's high watermark, as
the last fetch response carried it (right on Tansu too, unlike ``ListOffsets``), minus
the group's committed offset (or, before the first commit, this member's position).
A negative difference is exported as 0 and counted in ``trawl_consumer_lag_clamped_total``.
Partitions that move to another member are removed, so that the sum over all pods of
a service is the group's lag.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from libs.common import metrics

log = logging.getLogger(__name__)


def partition_lags(stats: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> lag of every partition the consumer owns and can measure (may be negative)."""
    out: dict[tuple[str, int], int] = {}
    for topic, detail in (stats.get("topics") or {}).items():
        for key, part in (detail.get("partitions") or {}).items():
            partition = int(key)
            if partition < 0 or not part.get("desired"):
                continue  # -1 is librdkafka's internal unassigned partition
            high = int(part.get("hi_offset", -1))
            done = int(part.get("committed_offset", -1001))
            position = int(part.get("app_offset", -1001))
            start = done if done >= 0 else position
            if high >= 0 and start >= 0:
                out[(topic, partition)] = high - start
    return out


class LagGauge:
    """``stats_cb`` of a consumer: keeps ``trawl_consumer_lag`` of its partitions current."""

    def __init__(self, service: str, topic_names: Mapping[str, str]) -> None:
        """``topic_names`` maps a topic's name on the broker (prefixed) to its declared name (the label)."""
        self._service = service
        self._names = dict(topic_names)
        self._exported: set[tuple[str, str]] = set()

    def __call__(self, raw: str) -> None:
        try:
            lags = partition_lags(json.loads(raw))
        except (ValueError, TypeError, AttributeError) as exc:  # never let metrics break consumption
            log.warning("unreadable consumer statistics: %s", exc)
            return
        self.export(lags)

    def export(self, lags: Mapping[tuple[str, int], int]) -> None:
        current: set[tuple[str, str]] = set()
        for (topic, partition), lag in lags.items():
            labels = (self._names.get(topic, topic), str(partition))
            current.add(labels)
            if lag < 0:
                metrics.CONSUMER_LAG_CLAMPED.labels(self._service, labels[0]).inc()
            metrics.CONSUMER_LAG.labels(self._service, *labels).set(max(lag, 0))
        for labels in self._exported - current:
            try:
                metrics.CONSUMER_LAG.remove(self._service, *labels)
            except KeyError:
                pass
        self._exported = current
