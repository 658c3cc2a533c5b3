"""The scheduler's notion of time: when a URL is due, when a hub is fetched again, when models retrain.

Real time in production. Tests and demos that run the simulated web on an accelerated
:class:`~libs.simweb.clock.SimClock` run the scheduler on the same time with
``TRAWL_SCHEDULER_CLOCK_SPEED``, ``_START`` and ``_ORIGIN``: at the wall-clock instant
``origin`` (UNIX seconds) the scheduler's time is ``start``, and it runs ``speed`` times
faster than real time; two processes given the same three values agree on the time.

Only scheduling time runs on this clock (``next_fetch_at``, retry backoffs, revisit plans,
the training window and schedule). Politeness (``hosts.next_allowed_at``, set from the
fetcher's outcomes), leases and bookkeeping stamps stay on the database's real clock: they
measure what servers and fetchers experience.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from libs.common.settings import setting


class SchedulerClock(Protocol):
    speed: float

    def now(self) -> datetime:
        """The current scheduling instant (timezone-aware, UTC)."""
        ...


class SystemClock:
    speed = 1.0

    def now(self) -> datetime:
        return datetime.now(UTC)


class ScaledClock:
    """``start + speed * (wall() - origin)``."""

    def __init__(self, start: datetime, speed: float, origin: float, wall: Callable[[], float] = time.time) -> None:
        if start.tzinfo is None:
            raise ValueError("the clock's start must be timezone-aware")
        if speed <= 0:
            raise ValueError(f"the clock's speed must be > 0, got {speed}")
        self.start = start
        self.speed = speed
        self.origin = origin
        self._wall = wall

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.speed * (self._wall() - self.origin))


@dataclass(frozen=True)
class ClockSettings:
    speed: float = setting(
        "TRAWL_SCHEDULER_CLOCK_SPEED", 1.0, "Scheduling seconds per real second (tests and demos only; 1 is real time)."
    )
    start: str = setting(
        "TRAWL_SCHEDULER_CLOCK_START",
        "",
        "ISO 8601 instant the scheduling clock shows at CLOCK_ORIGIN (tests and demos only; empty: real time).",
    )
    origin: float = setting(
        "TRAWL_SCHEDULER_CLOCK_ORIGIN",
        0.0,
        "Wall-clock UNIX seconds at which the scheduling clock shows CLOCK_START (0: when the service starts).",
    )


def clock_from(settings: ClockSettings) -> SchedulerClock:
    """Real time, unless a start or a speed other than 1 is set."""
    if not settings.start and settings.speed == 1.0:
        return SystemClock()
    start = datetime.fromisoformat(settings.start) if settings.start else datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return ScaledClock(start, settings.speed, settings.origin or time.time())
