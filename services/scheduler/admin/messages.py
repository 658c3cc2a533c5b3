"""Rows of the scheduler's tables as the admin API's messages, and policy changes from them."""

from __future__ import annotations

from datetime import UTC, datetime

from libs.common.wire import admin as admin_pb
from libs.common.wire import linkbase as linkbase_pb
from services.scheduler.admin.other_state import FetchRow, VersionRow
from services.scheduler.admin.store import HostRow
from services.scheduler.bandits.goal import GoalSpec
from services.scheduler.frontier.host_policies import HostPolicyRow

POLICY_FIELDS = ("min_delay_seconds", "max_concurrency", "budget", "blocked_until_ms", "partition_groups", "note")


def ms(at: datetime | None) -> int:
    return int(at.timestamp() * 1000) if at is not None else 0


def from_ms(value: int) -> datetime | None:
    return datetime.fromtimestamp(value / 1000.0, tz=UTC) if value > 0 else None


def policy_changes(policy: admin_pb.HostPolicy) -> dict[str, object]:
    """The fields present in ``policy`` as host policy columns (a lifted value as the store expects)."""
    changes: dict[str, object] = {}
    for name in POLICY_FIELDS:
        if not policy.HasField(name):  # type: ignore[arg-type]  # the names are the message's optional fields
            continue
        value = getattr(policy, name)
        if name == "blocked_until_ms":
            changes["blocked_until"] = from_ms(int(value))
        else:
            changes[name] = value
    return changes


def policy_message(row: HostPolicyRow | None, host: str = "") -> admin_pb.HostPolicy:
    if row is None:
        return admin_pb.HostPolicy(host=host)
    out = admin_pb.HostPolicy(
        host=row.host, removed=row.removed, updated_at_ms=ms(row.updated_at), fetched=row.fetched
    )
    if row.min_delay_seconds is not None:
        out.min_delay_seconds = row.min_delay_seconds
    if row.max_concurrency is not None:
        out.max_concurrency = row.max_concurrency
    if row.budget is not None:
        out.budget = row.budget
    if row.blocked_until is not None:
        out.blocked_until_ms = ms(row.blocked_until)
    if row.partition_groups is not None:
        out.partition_groups = row.partition_groups
    if row.note is not None:
        out.note = row.note
    return out


def host_message(row: HostRow, policy: HostPolicyRow | None) -> admin_pb.HostStats:
    return admin_pb.HostStats(
        host=row.host, partition=row.partition, queued=row.queued, in_flight=row.in_flight, fetched=row.fetched,
        failed=row.failed, blocked=row.blocked, errors=row.errors, next_allowed_at_ms=ms(row.next_allowed_at),
        slots=row.slots, policy=policy_message(policy) if policy else None, site=row.site,
    )


def fetch_message(row: FetchRow) -> linkbase_pb.FetchEvent:
    return linkbase_pb.FetchEvent(
        request_id=row.request_id, attempt=row.attempt, status=row.status,  # type: ignore[arg-type]  # stored enum number
        http_status=row.http_status, fetched_at_ms=ms(row.fetched_at), elapsed_ms=row.elapsed_ms, error=row.error,
    )


def version_message(row: VersionRow) -> linkbase_pb.PageVersion:
    return linkbase_pb.PageVersion(
        fetched_at_ms=ms(row.fetched_at), content_fingerprint=row.content_fp, published_at_ms=ms(row.published_at)
    )


def goal_message(spec: GoalSpec) -> admin_pb.CrawlGoal:
    return admin_pb.CrawlGoal(
        policy=spec.policy, goal=spec.goal, sites=list(spec.sites), budget=spec.budget, step=spec.step,
        parallel=spec.parallel,
    )


def goal_spec(goal: admin_pb.CrawlGoal, default: GoalSpec) -> GoalSpec:
    """The spec of ``goal``; fields left at zero or empty take ``default``'s (policy and sites excepted)."""
    return GoalSpec(
        policy=goal.policy.strip(),
        goal=goal.goal.strip() or default.goal,
        sites=tuple(dict.fromkeys(s.strip().lower() for s in goal.sites if s.strip())),
        budget=goal.budget,
        step=goal.step or default.step,
        parallel=goal.parallel or default.parallel,
    )
