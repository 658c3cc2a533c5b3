"""Shared table rows of the admin commands: times, host statistics, host policies."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def when(ms: int | None) -> str:
    """A UNIX time in ms as ISO 8601 UTC to the second ("" for none)."""
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_text(policy: dict[str, Any] | None) -> str:
    """A host policy in one line: ``delay=2s concurrency=1 budget=100 blocked_until=... groups=4``."""
    if not policy:
        return ""
    parts = []
    if policy.get("removed"):
        parts.append("removed")
    for key, label, unit in (("min_delay_seconds", "delay", "s"), ("max_concurrency", "concurrency", ""),
                             ("budget", "budget", ""), ("partition_groups", "groups", "")):
        if policy.get(key) is not None:
            parts.append(f"{label}={policy[key]:g}{unit}" if isinstance(policy[key], float) else
                         f"{label}={policy[key]}{unit}")
    if policy.get("blocked_until_ms"):
        parts.append(f"blocked_until={when(policy['blocked_until_ms'])}")
    if policy.get("note"):
        parts.append(f"note={policy['note']!r}")
    return " ".join(parts)


def host_rows(hosts: Sequence[dict[str, Any]]) -> tuple[list[str], list[tuple[Any, ...]]]:
    columns = ["host", "queued", "in flight", "fetched", "failed", "blocked", "errors", "next allowed", "policy"]
    rows = [(h["host"], h["queued"], h["in_flight"], h["fetched"], h["failed"], h["blocked"], h["errors"],
             when(h["next_allowed_at_ms"]), policy_text(h.get("policy"))) for h in hosts]
    return columns, rows
