"""One URL as the scheduler sees it, for the admin API's ``LookupUrl``: why is it (not) fetched?

The frontier row says the status, priority, attempts and last outcome; the host's row and
policy, the pause flag and the crawl goal say what holds a queued URL back and when it may go
next; the importance service's state gives its OPIC importance (the priority it sent, if that
state cannot be read); the linkbase's fetch history and versions give its history and
predicted change rate (``other_state``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from libs.common.db.pool import Database
from libs.common.urls import url_host
from libs.common.wire import admin as admin_pb
from services.scheduler.admin import other_state as other
from services.scheduler.admin.messages import fetch_message, ms, policy_message, version_message
from services.scheduler.admin.store import FrontierRow
from services.scheduler.frontier.host_policies import HostPolicyRow

RATE_VERSIONS = 100  # newest versions the change rate is estimated from


def held_by(
    row: FrontierRow, policy: HostPolicyRow | None, paused: bool, goal_holds: bool, now: datetime
) -> list[str]:
    """What keeps a queued URL from being dispatched now (nothing: it waits for its turn by priority)."""
    if row.status != "queued":
        return []
    reasons = []
    if paused:
        reasons.append("the crawl is paused")
    if row.next_fetch_at > now:
        reasons.append(f"its next fetch time ({row.next_fetch_at.isoformat()}): a retry's backoff")
    if policy is not None:
        if policy.removed:
            reasons.append("its site was removed")
        if policy.blocked_until is not None and policy.blocked_until > now:
            reasons.append(f"its host is blocked until {policy.blocked_until.isoformat()}")
        if policy.max_concurrency is not None and row.host_in_flight >= policy.max_concurrency:
            reasons.append(f"its host's concurrency limit ({policy.max_concurrency})")
        if policy.budget is not None and policy.fetched + row.host_in_flight >= policy.budget:
            reasons.append(f"its host's budget is spent ({policy.fetched} of {policy.budget} pages)")
    if row.host_in_flight >= row.host_slots:
        reasons.append(f"its host has {row.host_in_flight} request(s) in flight")
    if row.host_next_allowed_at is not None and row.host_next_allowed_at > now:
        reasons.append(f"its host's politeness gap, until {row.host_next_allowed_at.isoformat()}")
    if goal_holds:
        reasons.append("the crawl goal's site policy holds its site this round")
    return reasons


def next_fetch_at(row: FrontierRow, policy: HostPolicyRow | None) -> datetime | None:
    if row.status != "queued":
        return None
    times = [row.next_fetch_at, row.host_next_allowed_at]
    if policy is not None:
        times.append(policy.blocked_until)
    return max(t for t in times if t is not None)


async def url_report(
    db: Database,
    url: str,
    url_fp: int,
    row: FrontierRow | None,
    policy: HostPolicyRow | None,
    paused: bool,
    goal_holds: bool,
    history_limit: int,
) -> admin_pb.UrlReport:
    host = row.host if row else ""
    report = admin_pb.UrlReport(url=url, host=host, known=row is not None)
    if row is not None:
        now = datetime.now(UTC)
        report.status = row.status
        report.priority = row.priority
        report.next_fetch_at_ms = ms(next_fetch_at(row, policy))
        report.held_by.extend(held_by(row, policy, paused, goal_holds, now))
        report.attempts = row.attempts
        report.depth = row.depth
        report.source = row.source
        report.discovered_at_ms = ms(row.discovered_at)
        report.dispatched_at_ms = ms(row.dispatched_at)
        report.fetched_at_ms = ms(row.fetched_at)
        report.http_status = row.http_status or 0
        report.last_outcome = row.last_outcome or ""
        report.last_error = row.last_error or ""
        report.host_policy.CopyFrom(policy_message(policy, host))
    importance = await other.importance_of(db, url_fp)
    if importance is not None:
        report.importance.CopyFrom(admin_pb.Importance(
            cash=importance.cash, history=importance.history, importance=importance.importance,
            visits=importance.visits, last_visit_ms=ms(importance.last_visit), source="importance",
        ))
    elif row is not None:
        report.importance.CopyFrom(admin_pb.Importance(cash=row.priority, importance=row.priority, source="frontier"))
    fetches = await other.fetch_history(db, url_fp, host or url_host(url), history_limit)
    versions = await other.versions(db, url_fp, host or url_host(url), max(history_limit, RATE_VERSIONS))
    report.fetches.extend(fetch_message(f) for f in fetches)
    report.versions.extend(version_message(v) for v in versions[:history_limit])
    rate = other.changes_per_day(versions)
    if rate is not None:
        report.predicted_changes_per_day = rate
    return report
