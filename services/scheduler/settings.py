"""Settings of the scheduler service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class SchedulerSettings:
    group_id: str = setting("TRAWL_SCHEDULER_GROUP", "trawl-scheduler", "Consumer group of the scheduler.")
    max_in_flight: int = setting(
        "TRAWL_SCHEDULER_MAX_IN_FLIGHT",
        64,
        "Most fetch requests in flight over all hosts: what the fetchers can take (backpressure).",
    )
    dispatch_interval: float = setting(
        "TRAWL_SCHEDULER_DISPATCH_INTERVAL", 0.05, "Seconds between dispatch rounds when nothing was ready."
    )
    dispatch_batch: int = setting("TRAWL_SCHEDULER_DISPATCH_BATCH", 200, "Most requests emitted per dispatch round.")
    lease_seconds: float = setting(
        "TRAWL_SCHEDULER_LEASE_SECONDS",
        300.0,
        "A request with no outcome after this long is considered lost and queued again.",
    )
    max_attempts: int = setting(
        "TRAWL_SCHEDULER_MAX_ATTEMPTS", 3, "Fetch attempts of a URL before it is given up (failed, with the reason)."
    )
    retry_base_seconds: float = setting(
        "TRAWL_SCHEDULER_RETRY_BASE_SECONDS", 10.0, "Backoff before a retry: base * 2^(attempt - 1)."
    )
