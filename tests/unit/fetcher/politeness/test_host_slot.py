"""Releasing hosts to another fetcher, and holding hosts taken over, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from services.fetcher.clock import FakeClock
from services.fetcher.politeness.politeness import HostPoliteness, HostReleasedError


def make(clock: FakeClock, **overrides: float) -> HostPoliteness:
    settings: dict[str, float] = {
        "min_delay": 1.0,
        "max_crawl_delay": 20.0,
        "response_time_factor": 10.0,
        "max_backoff": 60.0,
        "park_after_failures": 5,
        "max_wait": 10_000.0,
    }
    settings.update(overrides)
    return HostPoliteness(clock, **settings)  # type: ignore[arg-type]


async def test_release_refuses_waiters_at_once_and_later_requests_until_claimed() -> None:
    clock = FakeClock()
    politeness = make(clock)
    async with politeness.slot("a.test") as slot:
        slot.record(0.1, 200, None, False)  # next request not before 1.1
    waiting = asyncio.ensure_future(politeness.slot("a.test").__aenter__())
    await asyncio.sleep(0)
    await politeness.release(["a.test"], grace=5.0)
    with pytest.raises(HostReleasedError):
        await waiting
    assert clock.now() == 0.0  # nobody waited for the gap
    with pytest.raises(HostReleasedError):
        async with politeness.slot("a.test"):
            pass
    politeness.claim("a.test")
    async with politeness.slot("a.test"):
        assert clock.now() >= 1.0  # the gap from the last request still holds


async def test_release_lets_a_request_on_the_wire_finish_within_the_grace() -> None:
    clock = FakeClock()
    politeness = make(clock)
    finished: list[float] = []

    async def fetch() -> None:
        async with politeness.slot("a.test") as slot:
            await slot.guard(clock.sleep(2.0))
            slot.record(2.0, 200, None, False)
            finished.append(clock.now())

    task = asyncio.ensure_future(fetch())
    await asyncio.sleep(0)
    await politeness.release(["a.test"], grace=5.0)
    assert finished == [2.0]
    await task
    assert politeness.next_allowed_at("a.test") == pytest.approx(22.0)  # 2 s response x 10


async def test_release_cuts_a_slow_request_short_after_the_grace() -> None:
    clock = FakeClock()
    politeness = make(clock)
    outcome: list[HostReleasedError] = []

    async def fetch() -> None:
        try:
            async with politeness.slot("a.test") as slot:
                await slot.guard(clock.sleep(100.0))
        except HostReleasedError as exc:
            outcome.append(exc)

    task = asyncio.ensure_future(fetch())
    await asyncio.sleep(0)
    await politeness.release(["a.test"], grace=3.0)
    assert clock.now() == pytest.approx(3.0)
    await task
    assert len(outcome) == 1
    # A request cut short after 3 s counts as a 3 s response: the gap is 30 s from now.
    assert outcome[0].retry_at == pytest.approx(33.0)
    assert politeness.stats.aborted_released == 1


async def test_release_of_a_host_with_nothing_in_flight_returns_at_once() -> None:
    clock = FakeClock()
    politeness = make(clock)
    await politeness.release(["idle.test", "unknown.test"], grace=10.0)
    assert clock.now() == 0.0
    assert politeness.released("idle.test")


async def test_hold_until_keeps_a_taken_over_host_waiting_and_counts_a_later_crawl_delay_from_then() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=0.0, response_time_factor=0.0)
    politeness.hold_until("a.test", 30.0, last_fetch_end=0.0)
    assert politeness.next_allowed_at("a.test") == 30.0
    async with politeness.slot("a.test") as slot:
        assert clock.now() == 30.0
        slot.record(0.0, 200, None, False)
    politeness.hold_until("b.test", 35.0, last_fetch_end=35.0)
    clock.set(36.0)
    async with politeness.slot("b.test", crawl_delay=8.0):
        assert clock.now() == 43.0  # robots.txt's Crawl-delay, from the taken-over moment
    politeness.hold_until("a.test", 1.0)  # never less strict than what is known
    assert politeness.next_allowed_at("a.test") >= 30.0
