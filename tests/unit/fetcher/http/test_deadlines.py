"""Request deadlines kept by one timer: the total time, the body's minimum rate, and nothing else cancelled."""

from __future__ import annotations

import asyncio

from services.fetcher.http.body_reader import ERROR_SLOW_BODY, BodyLimits, BodyReader
from services.fetcher.http.deadlines import FIRED_RATE, FIRED_TIME, Deadlines


async def test_a_task_past_its_deadline_is_cancelled_and_knows_why() -> None:
    deadlines = Deadlines(tick=0.02)

    async def work() -> str:
        deadline = deadlines.watch(0.05)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            if deadline.expired_here(FIRED_TIME):
                return "timed out"
            raise
        finally:
            deadline.close()
        return "finished"

    assert await asyncio.wait_for(work(), 2) == "timed out"
    assert len(deadlines) == 0


async def test_a_closed_deadline_cancels_nothing_and_the_timer_stops() -> None:
    deadlines = Deadlines(tick=0.01)
    deadline = deadlines.watch(0.02)
    deadline.close()
    await asyncio.sleep(0.1)  # the task would have been cancelled here
    assert deadline.fired == ""
    assert deadlines._timer is None  # nothing watched: no more ticks


async def test_a_cancellation_from_elsewhere_is_not_taken_for_the_deadline() -> None:
    deadlines = Deadlines(tick=60.0)  # checked by hand below
    entered = asyncio.Event()
    seen: list[bool] = []

    async def work() -> None:
        deadline = deadlines.watch(0.0)
        entered.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append(deadline.expired_here(FIRED_TIME))
            if not seen[-1]:
                raise
        finally:
            deadline.close()

    task = asyncio.ensure_future(work())
    await entered.wait()
    task.cancel()  # the caller gives up at the moment the deadline passes
    deadlines._check()
    await asyncio.gather(task, return_exceptions=True)
    assert seen == [False]
    assert task.cancelled()


class Drip:
    """A stream that yields ``size`` bytes every ``pause`` seconds, ``count`` times."""

    def __init__(self, size: int, pause: float, count: int) -> None:
        self._size, self._pause, self._left = size, pause, count

    async def read(self, n: int = -1) -> bytes:
        if not self._left:
            return b""
        self._left -= 1
        await asyncio.sleep(self._pause)
        return b"x" * self._size

    def at_eof(self) -> bool:
        return not self._left


async def test_the_request_deadline_keeps_the_minimum_rate_of_a_body() -> None:
    deadlines = Deadlines(tick=0.02)
    limits = BodyLimits(max_body_bytes=1 << 20, min_bytes_per_second=1000.0, rate_grace=0.2)
    deadline = deadlines.watch(10.0)
    try:
        slow = await BodyReader("", limits).read(Drip(10, 0.05, 100), deadline)  # 200 B/s
    finally:
        deadline.close()
    assert slow.error == ERROR_SLOW_BODY
    assert 0 < len(slow.raw) < 1000
    assert deadline.fired == FIRED_RATE

    deadline = deadlines.watch(10.0)
    try:
        fast = await BodyReader("", limits).read(Drip(500, 0.01, 10), deadline)  # 50 kB/s
    finally:
        deadline.close()
    assert (fast.error, len(fast.decoded), deadline.fired) == ("", 5000, "")
