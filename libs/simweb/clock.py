"""The simulated web's clock: a start instant plus scaled monotonic time.

Hub pages grow as this clock advances. ``speed=0`` freezes it (a static web),
``speed=1`` is real time, ``speed=3600`` makes an hour pass per real second, so
days of publishing can be watched in a test that lasts seconds. ``advance`` moves
it by hand, which is how deterministic tests step a frozen clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta


class SimClock:
    """Simulated wall clock: ``now() = start + speed * (monotonic elapsed) + manual advances``."""

    def __init__(
        self,
        start: datetime,
        speed: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if start.tzinfo is None:
            raise ValueError("SimClock start must be timezone-aware (UTC)")
        if speed < 0:
            raise ValueError(f"speed must be >= 0, got {speed}")
        self._start = start
        self._speed = speed
        self._monotonic = monotonic
        self._origin = monotonic()
        self._offset = timedelta(0)

    @classmethod
    def frozen(cls, at: datetime) -> SimClock:
        """A clock that stays at ``at`` until advanced by hand."""
        return cls(at, speed=0.0)

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def start(self) -> datetime:
        return self._start

    @property
    def origin(self) -> float:
        """The ``monotonic`` reading at which the clock showed ``start`` (with ``time.time`` as the
        monotonic source, a wall-clock instant another process can be given to run in step)."""
        return self._origin

    def now(self) -> datetime:
        """The current simulated instant (timezone-aware, UTC)."""
        elapsed = (self._monotonic() - self._origin) * self._speed
        return self._start + self._offset + timedelta(seconds=elapsed)

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward (or back, with a negative delta) by ``delta``."""
        self._offset += delta
