"""Request deadlines kept by one timer for all requests in flight.

Each request has a total time budget, and its body a minimum average rate (see
:mod:`services.fetcher.http.body_reader`). Giving each its own timer of the event loop
(``asyncio.timeout``, a rate timer) costs two timers scheduled and cancelled for every
request. Instead each request's task gets a :class:`Deadline` in a :class:`Deadlines`
set, and one timer, ticking every ``tick`` seconds while anything is watched, cancels
the tasks that are past their deadline or reading a body too slowly; the deadline then
says why (:attr:`Deadline.fired`). Deadlines are thus kept to within ``tick``.

The owner of a deadline catches the :class:`asyncio.CancelledError` and turns it into its
outcome when :meth:`Deadline.expired_here` says the cancellation was the deadline's alone.
"""

from __future__ import annotations

import asyncio

__all__ = ["FIRED_RATE", "FIRED_TIME", "Deadline", "Deadlines"]

FIRED_TIME = "time"
"""The total time budget ran out."""
FIRED_RATE = "rate"
"""The body came in slower than the minimum average rate."""


class Deadline:
    """One task's deadline (event loop time) and, while a body is read, its rate check."""

    __slots__ = ("_received", "_set", "at", "fired", "min_rate", "rate_grace", "rate_started", "task")

    def __init__(self, owner: set[Deadline], task: asyncio.Task[object], at: float) -> None:
        self._set = owner
        self.task = task
        self.at = at
        self.fired = ""
        self.min_rate = 0.0
        self.rate_grace = 0.0
        self.rate_started = 0.0
        self._received: bytearray | None = None

    def watch_rate(self, received: bytearray, min_rate: float, grace: float, now: float) -> None:
        """From ``now`` on, cancel the task if ``received`` grows slower than ``min_rate`` bytes per second
        on average (after ``grace`` seconds)."""
        self._received = received
        self.min_rate = min_rate
        self.rate_grace = grace
        self.rate_started = now

    def stop_rate(self) -> None:
        self._received = None

    def _due(self, now: float) -> str:
        if now >= self.at:
            return FIRED_TIME
        received = self._received
        if received is None:
            return ""
        # had nothing more come, the average would now be below the rate (after the grace)
        due = self.rate_started + max(self.rate_grace, (len(received) + 1) / self.min_rate)
        return FIRED_RATE if now >= due else ""

    def expired_here(self, why: str) -> bool:
        """Whether the task's cancellation came from this deadline for ``why``, and from nothing else
        (then it is taken back: the caller handles it instead of propagating it)."""
        return self.fired == why and self.task.uncancel() == 0

    def close(self) -> None:
        """Stop watching (before the task goes on to other work)."""
        self._set.discard(self)


class Deadlines:
    """The deadlines of the requests in flight, checked every ``tick`` seconds by one timer."""

    def __init__(self, tick: float = 0.1) -> None:
        if tick <= 0:
            raise ValueError("tick must be positive")
        self._tick = tick
        self._watched: set[Deadline] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._watched)

    def watch(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now for the current task; :meth:`Deadline.close` it when done."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("a deadline needs a task")
        deadline = Deadline(self._watched, task, loop.time() + seconds)
        self._watched.add(deadline)
        if self._timer is None or self._loop is not loop:  # a new loop: the old one's timer never fires here
            self._loop = loop
            self._timer = loop.call_later(self._tick, self._check)
        return deadline

    def _check(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        for deadline in [d for d in self._watched if d._due(now) or d.task.done()]:
            deadline.close()
            if not deadline.task.done() and deadline.task.get_loop() is loop:
                deadline.fired = deadline._due(now)
                deadline.task.cancel()
        self._timer = loop.call_later(self._tick, self._check) if self._watched else None
