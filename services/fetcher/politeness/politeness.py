"""Per-host politeness in the manner of Mercator's back queues.

Each host has a FIFO queue of callers waiting to fetch from it and an
earliest time ``t_e`` at which its next request may start. A caller enters
:meth:`HostPoliteness.slot`, waits until it is at the head of its host's
queue, the host has a free in-flight place (one by default) and ``t_e`` has
passed, fetches, and reports how it went with :meth:`HostSlot.record`, which
sets the host's next ``t_e``:

    t_e = end of the response + max(min_delay,
                                    min(robots crawl-delay, max_crawl_delay),
                                    response_time_factor * response time)

raised further by exponential backoff after consecutive failures (network
errors, 5xx, 429) and by a Retry-After on 429/503. After
``park_after_failures`` consecutive failures a host is parked: for
``park_duration`` seconds every request is refused with
:class:`HostParkedError`; afterwards one probe request is let through, and a
success clears the record while another failure parks the host again.

Only the head waiter of each host sleeps until ``t_e``, so the event loop's
timer heap plays the part of Mercator's heap of back queues. Every wait is
bounded by ``max_wait``: a caller that would wait longer gets
:class:`PolitenessTimeoutError` instead of being stuck.

When a host moves to another fetcher (its Kafka partition is revoked),
:meth:`HostPoliteness.release` refuses its waiters with
:class:`HostReleasedError`, gives requests on the wire a grace period and then
cuts them short (work run through :meth:`HostSlot.guard`), so that nothing is
sent to the host from here once it returns. :meth:`HostPoliteness.hold_until`
keeps a host waiting that was just taken over (see ``handoff.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

from services.fetcher.clock import Clock
from services.fetcher.politeness.host_slot import HostSlot, HostState, Waiter
from services.fetcher.politeness.politeness_types import (
    HostParkedError,
    HostReleasedError,
    ParkedHost,
    PolitenessRefusedError,
    PolitenessStats,
    PolitenessTimeoutError,
)

logger = logging.getLogger(__name__)

__all__ = [
    "HostParkedError",
    "HostPoliteness",
    "HostReleasedError",
    "HostSlot",
    "ParkedHost",
    "PolitenessRefusedError",
    "PolitenessStats",
    "PolitenessTimeoutError",
]


class HostPoliteness:
    """Per-host request gaps, backoff and parking; see the module docstring.

    ``max_in_flight_per_host`` above 1 lets that many requests to a host run
    at once; each start still waits for ``t_e``, which every grant pushes at
    least ``min_delay`` ahead. Host names are compared case-insensitively.
    State of idle hosts is dropped once more than ``max_hosts`` are known.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        min_delay: float,
        max_crawl_delay: float,
        response_time_factor: float = 10.0,
        max_backoff: float,
        park_after_failures: int,
        park_duration: float = 1800.0,
        backoff_base: float = 1.0,
        max_retry_after: float = 86_400.0,
        max_in_flight_per_host: int = 1,
        max_wait: float = 600.0,
        max_hosts: int = 100_000,
        gap_margin: float = 0.0,
    ) -> None:
        if max_in_flight_per_host < 1 or park_after_failures < 1:
            raise ValueError("max_in_flight_per_host and park_after_failures must be at least 1")
        self._clock = clock
        self._min_delay = min_delay
        self._max_crawl_delay = max_crawl_delay
        self._response_time_factor = response_time_factor
        self._gap_margin = max(0.0, gap_margin)
        self._max_backoff = max_backoff
        self._park_after = park_after_failures
        self._park_duration = park_duration
        self._backoff_base = backoff_base
        self._max_retry_after = max_retry_after
        self._max_in_flight = max_in_flight_per_host
        self._max_wait = max_wait
        self._max_hosts = max_hosts
        self._prune_at = max_hosts
        self._hosts: dict[str, HostState] = {}
        self.stats = PolitenessStats()

    def __len__(self) -> int:
        return len(self._hosts)

    def slot(self, host: str, crawl_delay: float | None = None, *, max_wait: float | None = None) -> _SlotHold:
        """Wait for ``host`` to be free (FIFO among its callers), then hold it for one request:
        ``async with politeness.slot(host) as slot: ...``.

        Raises :class:`HostParkedError` if the host is or becomes parked and
        :class:`PolitenessTimeoutError` if it is not free within ``max_wait``
        (default: the instance's). On leaving without :meth:`HostSlot.record`
        the request counts as neither success nor failure.
        """
        return _SlotHold(self, host, crawl_delay, self._max_wait if max_wait is None else max_wait)

    def try_enter(self, host: str, crawl_delay: float | None = None) -> HostSlot | None:
        """``host``'s slot at once, without a coroutine, when the host is free now (the common case), else None.

        What :meth:`slot` grants when it need not wait; on None, await :meth:`enter` (which waits,
        or raises for a parked or released host). Give the slot back with :meth:`leave`.
        """
        key = host.lower()
        state = self._delayed_state(key, crawl_delay)
        now = self._clock.now()
        if (state.waiters or state.in_flight >= self._max_in_flight or now < state.next_allowed_at
                or state.released or state.parked_until > now):
            return None
        state.in_flight += 1
        if self._max_in_flight > 1:
            state.next_allowed_at = max(state.next_allowed_at, now + self._min_delay)
        return self._granted(key, state, crawl_delay, now)

    async def enter(self, host: str, crawl_delay: float | None = None, max_wait: float | None = None) -> HostSlot:
        """``host``'s slot once it is free (FIFO among its callers); see :meth:`slot` for what it raises."""
        key = host.lower()
        state = self._delayed_state(key, crawl_delay)
        started = self._clock.now()
        await self._acquire(key, state, self._max_wait if max_wait is None else max_wait)
        return self._granted(key, state, crawl_delay, started)

    def leave(self, slot: HostSlot) -> None:
        """Give back a slot of :meth:`try_enter` or :meth:`enter`."""
        self._leave(slot)

    def _delayed_state(self, key: str, crawl_delay: float | None) -> HostState:
        state = self._state_for(key)
        if crawl_delay is not None and state.last_fetch_end is not None:
            # The previous request may have been made without knowing this delay (robots.txt
            # itself is fetched before its Crawl-delay is known): the delay still applies.
            state.next_allowed_at = max(state.next_allowed_at, state.last_fetch_end + self._gap(crawl_delay, 0.0))
        return state

    def _granted(self, key: str, state: HostState, crawl_delay: float | None, started: float) -> HostSlot:
        granted_at = self._clock.now()
        self.stats.granted += 1
        self.stats.wait_seconds += granted_at - started
        slot = HostSlot(self, key, state, crawl_delay, granted_at, granted_at - started)
        state.holders.add(slot)
        return slot

    def _leave(self, slot: HostSlot) -> None:
        state = slot._state
        state.in_flight -= 1
        state.holders.discard(slot)
        if not slot.recorded:
            end = self._clock.now()
            state.next_allowed_at = max(state.next_allowed_at, end + self._gap(slot.crawl_delay, 0.0))
        if state.in_flight == 0 and state.drained is not None:
            state.drained.set()
        self._notify_head(state)

    def next_allowed_at(self, host: str) -> float:
        """Clock time at which a request to ``host`` may start (now, for unknown hosts)."""
        state = self._hosts.get(host.lower())
        now = self._clock.now()
        if state is None:
            return now
        return max(now, state.next_allowed_at, state.parked_until)

    def seed_host_state(
        self, host: str, last_fetch_end: float, *, crawl_delay: float | None = None, response_seconds: float = 0.0
    ) -> None:
        """Start from a known last fetch of ``host`` (on this clock's scale), e.g. after taking it over.

        The host's next request will not start before ``last_fetch_end`` plus
        the usual gap; state already known here is never made less strict.
        """
        key = host.lower()
        state = self._state_for(key)
        state.next_allowed_at = max(state.next_allowed_at, last_fetch_end + self._gap(crawl_delay, response_seconds))
        if state.last_fetch_end is None or last_fetch_end > state.last_fetch_end:
            state.last_fetch_end = last_fetch_end
        self._notify_head(state)

    def hold_until(self, host: str, when: float, *, last_fetch_end: float | None = None) -> None:
        """Let no request start to ``host`` before ``when`` (clock time); never makes the host less strict.

        ``last_fetch_end``, if given, is when its last request is taken to have
        ended (a Crawl-delay learned later is counted from there).
        """
        state = self._state_for(host.lower())
        state.next_allowed_at = max(state.next_allowed_at, when)
        if last_fetch_end is not None and (state.last_fetch_end is None or last_fetch_end > state.last_fetch_end):
            state.last_fetch_end = last_fetch_end

    async def release(self, hosts: Iterable[str], grace: float) -> None:
        """Give ``hosts`` up: refuse their waiters now, cut requests on the wire short after ``grace`` seconds.

        Returns once none of them has a request in flight here. Until
        :meth:`claim`, new requests to them are refused with :class:`HostReleasedError`.
        """
        busy: list[HostState] = []
        for host in hosts:
            state = self._state_for(host.lower())
            state.released = True
            self._notify_all(state)
            if state.in_flight:
                state.drained = asyncio.Event()
                busy.append(state)
        if not busy:
            return
        if not await self._drained(busy, grace):
            for state in busy:
                for slot in list(state.holders):
                    slot.abort()
            await self._drained(busy, None)

    def claim(self, host: str) -> None:
        """Take ``host`` (back) on: requests to it are no longer refused as released."""
        state = self._hosts.get(host.lower())
        if state is not None and state.released:
            state.released = False
            state.drained = None

    def released(self, host: str) -> bool:
        """Whether ``host`` was released and not claimed since."""
        state = self._hosts.get(host.lower())
        return state is not None and state.released

    async def _drained(self, states: list[HostState], timeout: float | None) -> bool:
        """Wait until nothing is in flight to any of ``states`` (at most ``timeout`` on the clock)."""
        events = [state.drained for state in states if state.in_flight and state.drained is not None]
        if not events:
            return True
        waits = asyncio.ensure_future(asyncio.gather(*(event.wait() for event in events)))
        timer = asyncio.ensure_future(self._clock.sleep(timeout)) if timeout is not None else None
        try:
            await asyncio.wait([w for w in (waits, timer) if w is not None], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if timer is not None:
                timer.cancel()
            waits.cancel()
        return all(state.in_flight == 0 for state in states)

    def parked_hosts(self) -> list[ParkedHost]:
        """Hosts parked right now, soonest release first."""
        now = self._clock.now()
        parked = [
            ParkedHost(host, state.parked_until, state.park_reason, state.consecutive_failures)
            for host, state in self._hosts.items()
            if state.parked_until > now
        ]
        return sorted(parked, key=lambda p: p.until)

    def unpark(self, host: str) -> None:
        """Release a parked host now and clear its failure record."""
        state = self._hosts.get(host.lower())
        if state is not None:
            state.parked_until = 0.0
            state.park_reason = ""
            state.consecutive_failures = 0
            self._notify_head(state)

    def forget(self, host: str) -> bool:
        """Drop the state of ``host`` if nobody is using it (e.g. when it moves to another owner)."""
        key = host.lower()
        state = self._hosts.get(key)
        if state is None or state.in_flight or state.waiters:
            return False
        del self._hosts[key]
        return True

    def _gap(self, crawl_delay: float | None, response_seconds: float) -> float:
        robots = min(crawl_delay, self._max_crawl_delay) if crawl_delay is not None else 0.0
        return max(self._min_delay, robots, self._response_time_factor * response_seconds) + self._gap_margin

    def _state_for(self, key: str) -> HostState:
        state = self._hosts.get(key)
        if state is None:
            if len(self._hosts) >= self._prune_at:
                self._prune()
            state = self._hosts[key] = HostState()
        return state

    def _prune(self) -> None:
        now = self._clock.now()
        for key in [k for k, s in self._hosts.items() if s.idle(now)]:
            del self._hosts[key]
        # Scan again only after the table has grown well past what is left.
        self._prune_at = max(self._max_hosts, 2 * len(self._hosts))

    def _check_refused(self, key: str, state: HostState, now: float) -> None:
        if state.released:
            self.stats.refused_released += 1
            raise HostReleasedError(key, "released to another fetcher", max(now, state.next_allowed_at))
        if state.parked_until > now:
            self.stats.refused_parked += 1
            raise HostParkedError(key, f"parked: {state.park_reason}", state.parked_until)

    async def _acquire(self, key: str, state: HostState, max_wait: float) -> None:
        now = self._clock.now()
        self._check_refused(key, state, now)
        if state.next_allowed_at - now > max_wait:
            self.stats.refused_timeout += 1
            raise PolitenessTimeoutError(
                key, f"not free for {state.next_allowed_at - now:.1f}s, over max_wait", state.next_allowed_at
            )
        if not state.waiters and state.in_flight < self._max_in_flight and now >= state.next_allowed_at:
            state.in_flight += 1  # free right away: no queue to join (the common case)
            if self._max_in_flight > 1:
                state.next_allowed_at = max(state.next_allowed_at, now + self._min_delay)
            return
        deadline = now + max_wait
        waiter = Waiter()
        state.waiters.append(waiter)
        granted = False
        try:
            while True:
                now = self._clock.now()
                self._check_refused(key, state, now)
                if state.waiters[0] is waiter and state.in_flight < self._max_in_flight:
                    if now >= state.next_allowed_at:
                        state.waiters.popleft()
                        state.in_flight += 1
                        if self._max_in_flight > 1:
                            state.next_allowed_at = max(state.next_allowed_at, now + self._min_delay)
                        granted = True
                        self._notify_head(state)
                        return
                    wake_at = min(state.next_allowed_at, deadline)
                else:
                    wake_at = deadline
                if now >= deadline:
                    self.stats.refused_timeout += 1
                    raise PolitenessTimeoutError(key, f"waited {max_wait:.1f}s (max_wait)", state.next_allowed_at)
                await self._wait(waiter, wake_at - now)
        finally:
            if not granted:
                was_head = bool(state.waiters) and state.waiters[0] is waiter
                with contextlib.suppress(ValueError):
                    state.waiters.remove(waiter)
                if was_head:
                    self._notify_head(state)

    async def _wait(self, waiter: Waiter, timeout: float) -> None:
        """Sleep on the clock for ``timeout`` seconds or until ``waiter`` is notified."""
        sleeper = asyncio.ensure_future(self._clock.sleep(timeout))
        notified = asyncio.ensure_future(waiter.event.wait())
        try:
            await asyncio.wait((sleeper, notified), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            notified.cancel()
        waiter.event.clear()

    @staticmethod
    def _notify_head(state: HostState) -> None:
        if state.waiters:
            state.waiters[0].event.set()

    @staticmethod
    def _notify_all(state: HostState) -> None:
        for waiter in state.waiters:
            waiter.event.set()

    def _record_cut_short(self, slot: HostSlot, state: HostState) -> None:
        """A request cut short by a release: it lasted until now, neither success nor failure."""
        slot.recorded = True
        self.stats.aborted_released += 1
        now = self._clock.now()
        state.last_fetch_end = now
        gap = self._gap(slot.crawl_delay, max(0.0, now - slot.granted_at))
        state.next_allowed_at = max(state.next_allowed_at, now + gap)

    def _record(
        self,
        slot: HostSlot,
        state: HostState,
        response_seconds: float,
        status: int,
        retry_after: float | None,
        error: bool,
    ) -> None:
        now = self._clock.now()
        state.last_fetch_end = now
        wait = self._gap(slot.crawl_delay, response_seconds)
        failed = error or status == 429 or status >= 500
        if failed:
            self.stats.failures += 1
            state.consecutive_failures += 1
            exponent = min(state.consecutive_failures - 1, 62)
            wait = max(wait, min(self._max_backoff, self._backoff_base * 2.0**exponent))
        else:
            state.consecutive_failures = 0
            state.park_reason = ""
        if retry_after is not None and status in (429, 503):
            wait = max(wait, min(retry_after, self._max_retry_after))
        state.next_allowed_at = max(state.next_allowed_at, now + wait)
        if failed and state.consecutive_failures >= self._park_after:
            cause = "network error" if error else f"status {status}"
            state.parked_until = max(state.parked_until, now + self._park_duration)
            state.park_reason = f"{state.consecutive_failures} consecutive failures, last: {cause}"
            self.stats.parked += 1
            logger.info("parking host %s until %.1f: %s", slot.host, state.parked_until, state.park_reason)
            self._notify_all(state)


class _SlotHold:
    """``async with`` a host's slot (what :meth:`HostPoliteness.slot` returns): a plain class,
    cheaper per request than a generator-based context manager."""

    __slots__ = ("_crawl_delay", "_host", "_max_wait", "_owner", "_slot")

    def __init__(self, owner: HostPoliteness, host: str, crawl_delay: float | None, max_wait: float) -> None:
        self._owner = owner
        self._host = host
        self._crawl_delay = crawl_delay
        self._max_wait = max_wait
        self._slot: HostSlot | None = None

    async def __aenter__(self) -> HostSlot:
        self._slot = await self._owner.enter(self._host, self._crawl_delay, self._max_wait)
        return self._slot

    async def __aexit__(self, *exc_info: object) -> None:
        slot, self._slot = self._slot, None
        if slot is not None:
            self._owner._leave(slot)
