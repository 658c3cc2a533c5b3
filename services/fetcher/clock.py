"""Injectable time for the fetcher: a real clock and a fake one for tests and simulations.

Everything in the fetcher that waits or measures time takes a :class:`Clock`
so that hours of politeness behaviour can be exercised in milliseconds.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

__all__ = ["Clock", "FakeClock", "SystemClock", "from_unix_ms", "to_unix_ms"]

# Event-loop turns the fake clock lets pass before it decides that every task
# is blocked and moves time to the next deadline. Chains of wake-ups (a
# released slot waking a waiter that wakes the next one) need a few turns each.
_SETTLE_TURNS = 50


class Clock(Protocol):
    """A monotonic clock in seconds and a way to wait on it."""

    def now(self) -> float:
        """Seconds on a monotonic scale; only differences are meaningful."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``now()`` has advanced by at least ``seconds``."""
        ...


def from_unix_ms(clock: Clock, unix_ms: float, wall: Callable[[], float] = time.time) -> float:
    """The time on ``clock`` of ``unix_ms`` (a time another process sent, in Unix milliseconds)."""
    return clock.now() + (unix_ms / 1000.0 - wall())


def to_unix_ms(clock: Clock, clock_time: float, wall: Callable[[], float] = time.time) -> int:
    """``clock_time``, a time on ``clock``, in Unix milliseconds (to send to another process)."""
    return int((wall() + (clock_time - clock.now())) * 1000)


class SystemClock:
    """The real clock: :func:`time.monotonic` and :func:`asyncio.sleep`."""

    def now(self) -> float:
        """Seconds of the system's monotonic clock."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep on the running event loop."""
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock whose time moves only when told to, or when every task is waiting on it.

    Sleepers are kept in a heap of deadlines. Time moves forward with
    :meth:`advance` / :meth:`set`, which wake every sleeper whose deadline has
    passed. With ``auto_advance`` (the default) a background task does this on
    its own: once the event loop has gone :data:`_SETTLE_TURNS` turns with
    sleepers pending, it jumps straight to the earliest deadline. Concurrent
    sleepers therefore wake in deadline order and a sleep costs no real time.

    Auto-advance assumes that tasks blocked on real I/O are not expected to
    finish "before" a fake deadline; tests that mix real network waits with
    fake time should use ``auto_advance=False`` or :class:`SystemClock`.
    """

    def __init__(self, start: float = 0.0, *, auto_advance: bool = True) -> None:
        self._now = start
        self._auto_advance = auto_advance
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()
        self._advancer: asyncio.Task[None] | None = None

    def now(self) -> float:
        """The fake time in seconds."""
        return self._now

    @property
    def pending_sleepers(self) -> int:
        """How many sleeps have not returned yet."""
        return sum(1 for _, _, future in self._timers if not future.done())

    async def sleep(self, seconds: float) -> None:
        """Wait until the fake time reaches ``now() + seconds`` (yields once if ``seconds <= 0``)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._timers, (self._now + seconds, next(self._sequence), future))
        if self._auto_advance and (self._advancer is None or self._advancer.done()):
            self._advancer = loop.create_task(self._run_auto_advance())
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and wake the sleepers that are due."""
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        self.set(self._now + seconds)

    def set(self, when: float) -> None:
        """Move time forward to ``when`` (never backwards) and wake the sleepers that are due."""
        self._now = max(self._now, when)
        while self._timers and self._timers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._timers)
            if not future.done():
                future.set_result(None)

    def _drop_cancelled(self) -> None:
        while self._timers and self._timers[0][2].done():
            heapq.heappop(self._timers)

    async def _run_auto_advance(self) -> None:
        while True:
            for _ in range(_SETTLE_TURNS):
                await asyncio.sleep(0)
            self._drop_cancelled()
            if not self._timers:
                return
            self.set(self._timers[0][0])
