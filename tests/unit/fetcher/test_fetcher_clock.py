"""FakeClock: manual and automatic advance, deadline order, cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.fetcher.clock import FakeClock, SystemClock


async def test_concurrent_sleepers_wake_in_deadline_order_without_real_waiting() -> None:
    clock = FakeClock(start=10.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    started = time.monotonic()
    await asyncio.gather(sleeper("late", 3600.0), sleeper("early", 5.0), sleeper("middle", 60.0))
    assert woke == [("early", 15.0), ("middle", 70.0), ("late", 3610.0)]
    assert time.monotonic() - started < 1.0


async def test_manual_clock_moves_only_when_told() -> None:
    clock = FakeClock(auto_advance=False)
    task = asyncio.create_task(clock.sleep(5.0))
    await asyncio.sleep(0.01)
    assert not task.done()
    assert clock.pending_sleepers == 1
    clock.advance(4.0)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(1.0)
    await asyncio.wait_for(task, 1.0)
    assert clock.now() == 5.0
    with pytest.raises(ValueError):
        clock.advance(-1.0)


async def test_a_cancelled_sleep_does_not_hold_time_back() -> None:
    clock = FakeClock()
    doomed = asyncio.create_task(clock.sleep(1.0))
    await asyncio.sleep(0)
    doomed.cancel()
    await clock.sleep(100.0)
    assert clock.now() == 100.0
    assert clock.pending_sleepers == 0


async def test_system_clock_is_monotonic_and_sleeps() -> None:
    clock = SystemClock()
    before = clock.now()
    await clock.sleep(0.01)
    assert clock.now() - before >= 0.009
