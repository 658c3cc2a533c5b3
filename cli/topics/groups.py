"""Consumer groups: lag per partition and per group, and which member owns which partition.

A group's partitions are those of every topic it has committed offsets for or its members
are assigned; a partition it never committed counts its lag from the partition's first
offset. Lag is measured from ends read from the data and clamped at zero, flagged
(:mod:`libs.common.kafka.lag`). Members come from ``DescribeConsumerGroups``; a broker
that does not report them (Tansu) leaves ownership unknown, and the report says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from cli.topics.target import Target
from libs.common.kafka.ends import TP, PartitionEnd, partition_ends
from libs.common.kafka.lag import PartitionLag, committed_offsets, lag_of, topic_partitions

NO_MEMBERS = (
    "no members reported for {groups}: the group is empty, or the broker does not report members "
    "(Tansu does not); partition ownership is unknown"
)
CLAMPED = (
    "lag clamped to 0 on {count} partition(s) whose committed offset lies past the end found (an end that "
    "could not be read in time from a broker reporting a too-low high watermark, as Tansu does after "
    "batched produces, or offsets committed past the data)"
)
CORRECTED = (
    "{count} partition end(s) read from the data lie past the high watermark the broker reported "
    "(Tansu reports a too-low one after batched produces); lag is measured from the data"
)


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TP, ...]

    @property
    def label(self) -> str:
        return f"{self.client_id}@{self.host}"


@dataclass
class GroupReport:
    group: str
    state: str
    members: list[Member] = field(default_factory=list)
    partitions: list[PartitionLag] = field(default_factory=list)
    owners: dict[TP, str] = field(default_factory=dict)

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def clamped(self) -> int:
        return sum(p.clamped for p in self.partitions)

    def as_json(self) -> dict[str, Any]:
        return {
            "group": self.group, "state": self.state, "lag": self.lag, "clamped_partitions": self.clamped,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                         "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]}
                        for m in self.members],
            "partitions": [{**asdict(p), "owner": self.owners.get((p.topic, p.partition))} for p in self.partitions],
        }


def _state_name(state: Any) -> str:
    return str(getattr(state, "name", state) or "UNKNOWN").lower()


def group_names(admin: AdminClient, timeout: float) -> dict[str, str]:
    """Group id -> state of every consumer group on the broker."""
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout)
    return {g.group_id: _state_name(g.state) for g in listed.valid}


def describe_members(admin: AdminClient, groups: list[str], timeout: float) -> dict[str, tuple[str, list[Member]]]:
    """Group id -> (state, members with their assignments), for the groups the broker describes."""
    out: dict[str, tuple[str, list[Member]]] = {}
    if not groups:
        return out
    for group, future in admin.describe_consumer_groups(groups, request_timeout=timeout).items():
        try:
            described = future.result(timeout)
        except Exception:  # one group the broker cannot describe must not hide the others
            continue
        members = [
            Member(m.member_id, m.client_id, m.host,
                   tuple((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])))
            for m in described.members
        ]
        out[group] = (_state_name(described.state), members)
    return out


@dataclass
class GroupsView:
    reports: list[GroupReport]
    ends: dict[TP, PartitionEnd]

    def notes(self) -> list[str]:
        notes = []
        silent = [r.group for r in self.reports if not r.members and r.partitions]
        if silent:
            notes.append(NO_MEMBERS.format(groups=", ".join(silent)))
        clamped = sum(r.clamped for r in self.reports)
        if clamped:
            notes.append(CLAMPED.format(count=clamped))
        corrected = sum(end.corrected for end in self.ends.values())
        if corrected:
            notes.append(CORRECTED.format(count=corrected))
        return notes


def report_groups(target: Target, wanted: list[str] | None = None, timeout: float = 10.0) -> GroupsView:
    """A report per consumer group (all groups, or the ``wanted`` ones that exist)."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "log_level": 0})
    states = group_names(admin, timeout)
    names = sorted(states) if not wanted else [g for g in wanted if g in states]
    described = describe_members(admin, names, timeout)
    reports: list[GroupReport] = []
    needed: dict[str, dict[TP, int]] = {}
    for name in names:
        state, members = described.get(name, (states[name], []))
        report = GroupReport(name, state, members)
        committed = committed_offsets(admin, name, None, timeout)
        assigned = {tp for m in members for tp in m.assignment}
        topics = {t for t, _ in committed} | {t for t, _ in assigned}
        needed[name] = {tp: committed.get(tp, -1) for tp in topic_partitions(admin, topics, timeout)}
        report.owners = {tp: m.label for m in members for tp in m.assignment}
        reports.append(report)
    ends = partition_ends(target.bootstrap, {tp for offsets in needed.values() for tp in offsets}, timeout=timeout)
    for report in reports:
        report.partitions = [lag_of(report.group, ends[tp], done) for tp, done in sorted(needed[report.group].items())]
    return GroupsView(reports, ends)


@dataclass(frozen=True)
class Reader:
    """A group that reads a partition: its lag there and the member that owns it (if reported)."""

    lag: PartitionLag
    owner: str | None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self.lag), "owner": self.owner}


def readers_of(target: Target, partitions: list[TP], timeout: float = 10.0) -> list[Reader]:
    """Every group that has committed on, or is assigned, one of ``partitions`` (existing topics only)."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "log_level": 0})
    existing = set(admin.list_topics(timeout=timeout).topics)
    tps = [tp for tp in partitions if tp[0] in existing]
    if not tps:
        return []
    names = sorted(group_names(admin, timeout))
    members = describe_members(admin, names, timeout)
    ends = partition_ends(target.bootstrap, tps, timeout=timeout)
    out = []
    for group in names:
        committed = committed_offsets(admin, group, tps, timeout)
        owners = {tp: m.label for m in members.get(group, ("", []))[1] for tp in m.assignment}
        out += [Reader(lag_of(group, ends[tp], committed.get(tp, -1)), owners.get(tp))
                for tp in tps if committed.get(tp, -1) >= 0 or tp in owners]
    return out
