"""One host's politeness state, and the slot a request holds while it is sent.

The state machine itself (gaps, backoff, parking, FIFO waiters) lives in
:class:`services.fetcher.politeness.politeness.HostPoliteness`; these are its parts.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn, TypeVar

from services.fetcher.politeness.politeness_types import HostReleasedError

if TYPE_CHECKING:
    from services.fetcher.politeness.politeness import HostPoliteness

logger = logging.getLogger(__name__)

__all__ = ["HostSlot", "HostState", "Waiter"]

T = TypeVar("T")


class Waiter:
    """One caller queued for a host."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = asyncio.Event()


@dataclass
class HostState:
    """Everything known about one host: its next allowed time, failures, parking, queue and holders."""

    next_allowed_at: float = 0.0
    in_flight: int = 0
    waiters: deque[Waiter] = field(default_factory=deque)
    consecutive_failures: int = 0
    parked_until: float = 0.0
    park_reason: str = ""
    last_fetch_end: float | None = None
    released: bool = False
    holders: set[HostSlot] = field(default_factory=set)
    drained: asyncio.Event | None = None  # set once nothing is in flight, while a release waits

    def idle(self, now: float) -> bool:
        return (
            self.in_flight == 0
            and not self.waiters
            and self.consecutive_failures == 0
            and self.next_allowed_at <= now
            and self.parked_until <= now
        )


class HostSlot:
    """The right to send one request to ``host``; report the outcome with :meth:`record`."""

    __slots__ = ("_cut", "_guarded", "_owner", "_state", "crawl_delay", "granted_at", "host", "recorded", "waited")

    def __init__(
        self,
        owner: HostPoliteness,
        host: str,
        state: HostState,
        crawl_delay: float | None,
        granted_at: float,
        waited: float,
    ) -> None:
        self._owner = owner
        self._state = state
        self.host = host
        self.crawl_delay = crawl_delay
        self.granted_at = granted_at
        self.waited = waited
        self.recorded = False
        self._cut = False  # abort() was called
        self._guarded: asyncio.Task[object] | None = None

    async def guard(self, work: Awaitable[T]) -> T:
        """Await ``work`` (the request) in this task, cutting it short if the host is released meanwhile.

        A cut-short request is cancelled, counts as a response that lasted
        until now (for the gap), and raises :class:`HostReleasedError`. The
        fetch path spells the same steps out (:meth:`begin`, :meth:`cancelled`,
        :meth:`end`) to spare every resumption of the request a coroutine frame.
        """
        try:
            self.begin()
        except HostReleasedError:
            if inspect.iscoroutine(work):
                work.close()
            raise
        try:
            return await work
        except asyncio.CancelledError:
            self.cancelled()
            raise
        finally:
            self.end()

    def begin(self) -> None:
        """The request starts in the current task, which :meth:`abort` cancels; raises if already cut."""
        task = asyncio.current_task()
        if self._cut or task is None:
            self._released()
        self._guarded = task

    def cancelled(self) -> None:
        """The request was cancelled: raises :class:`HostReleasedError` if :meth:`abort` did it, else returns."""
        task = self._guarded
        if self._cut and task is not None and task.uncancel() == 0:
            self._released()

    def end(self) -> None:
        self._guarded = None

    def _released(self) -> NoReturn:
        self._owner._record_cut_short(self, self._state)
        retry_at = self._owner.next_allowed_at(self.host)
        raise HostReleasedError(self.host, "released to another fetcher mid-request", retry_at)

    def abort(self) -> None:
        """Cut the request running in :meth:`guard` short (the host is being released)."""
        if self._cut:
            return
        self._cut = True
        if self._guarded is not None:
            self._guarded.cancel()

    def record(self, response_seconds: float, status: int, retry_after: float | None, error: bool) -> None:
        """Report the finished request: its duration, HTTP status (0 if none), Retry-After, network error.

        The end of the response is taken to be now. Only the first call counts.
        """
        if self.recorded:
            return
        self.recorded = True
        self._owner._record(self, self._state, max(0.0, response_seconds), status, retry_after, error)
