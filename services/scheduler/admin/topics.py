"""Topic statistics for the admin API: messages per topic and each consumer group's lag.

Built on :mod:`libs.common.kafka.lag` (ends checked against the data, lag clamped at zero):
every declared topic (with the crawl's topic prefix), and every consumer group on the broker
that committed offsets on one of them. Blocking Kafka calls: run it in a thread.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

from libs.common.kafka.ends import TP, partition_ends
from libs.common.kafka.lag import committed_offsets, lag_of, topic_partitions
from libs.common.topics import ALL_TOPICS


@dataclass
class GroupLagRow:
    group: str
    lag: int = 0
    partitions: int = 0
    clamped: bool = False


@dataclass
class TopicRow:
    topic: str
    partitions: int
    messages: int
    groups: list[GroupLagRow] = field(default_factory=list)


def topic_stats(bootstrap: str, prefix: str, timeout: float = 5.0) -> list[TopicRow]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    names = [prefix + t.name for t in ALL_TOPICS]
    partitions = topic_partitions(admin, names, timeout)
    ends = partition_ends(bootstrap, partitions, timeout=timeout)
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout)
    lags: dict[str, dict[str, GroupLagRow]] = defaultdict(dict)
    for group in sorted(g.group_id for g in listed.valid):
        committed = {tp: o for tp, o in committed_offsets(admin, group, None, timeout).items() if tp in ends}
        for tp, offset in sorted(committed.items()):
            if offset < 0:
                continue
            lag = lag_of(group, ends[tp], offset)
            row = lags[tp[0]].setdefault(group, GroupLagRow(group))
            row.lag += lag.lag
            row.partitions += 1
            row.clamped |= lag.clamped
    by_topic: dict[str, list[TP]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp[0]].append(tp)
    return [
        TopicRow(
            topic,
            len(by_topic[topic]),
            sum(ends[tp].high - ends[tp].low for tp in by_topic[topic]),
            [lags[topic][g] for g in sorted(lags[topic])],
        )
        for topic in names
        if topic in by_topic
    ]
