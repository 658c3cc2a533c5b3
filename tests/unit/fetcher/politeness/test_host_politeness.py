"""HostPoliteness on a fake clock: gaps, exclusivity, Retry-After, backoff, parking, FIFO."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

import pytest

from services.fetcher.clock import FakeClock
from services.fetcher.politeness.politeness import HostParkedError, HostPoliteness, PolitenessTimeoutError


@dataclass(frozen=True)
class Visit:
    name: str
    start: float
    end: float


def make(clock: FakeClock, **overrides: float) -> HostPoliteness:
    settings: dict[str, float] = {
        "min_delay": 1.0,
        "max_crawl_delay": 20.0,
        "response_time_factor": 10.0,
        "max_backoff": 60.0,
        "park_after_failures": 5,
        "park_duration": 300.0,
        "max_wait": 10_000.0,
    }
    settings.update(overrides)
    return HostPoliteness(clock, **settings)  # type: ignore[arg-type]


async def visit(
    politeness: HostPoliteness,
    clock: FakeClock,
    host: str,
    name: str = "",
    *,
    duration: float = 0.1,
    status: int = 200,
    retry_after: float | None = None,
    error: bool = False,
    crawl_delay: float | None = None,
    log: list[Visit] | None = None,
) -> Visit:
    async with politeness.slot(host, crawl_delay=crawl_delay) as slot:
        start = clock.now()
        await clock.sleep(duration)
        slot.record(duration, status, retry_after, error)
        result = Visit(name, start, clock.now())
    if log is not None:
        log.append(result)
    return result


async def test_gap_is_max_of_min_delay_crawl_delay_and_response_time() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=2.0, response_time_factor=10.0)
    first = await visit(politeness, clock, "a.test", duration=0.5)  # 10 * 0.5 = 5 > 2
    second = await visit(politeness, clock, "a.test", duration=0.1)
    assert second.start - first.end == pytest.approx(5.0)
    third = await visit(politeness, clock, "a.test", duration=0.1)
    assert third.start - second.end == pytest.approx(2.0)  # min_delay wins over 10 * 0.1
    fourth = await visit(politeness, clock, "a.test", duration=0.1, crawl_delay=7.0)
    # A Crawl-delay learned after the previous request (robots.txt is fetched before its
    # delay is known) still spaces this request from that one.
    assert fourth.start - third.end == pytest.approx(7.0)
    fifth = await visit(politeness, clock, "a.test", duration=0.1, crawl_delay=7.0)
    assert fifth.start - fourth.end == pytest.approx(7.0)
    sixth = await visit(politeness, clock, "a.test", duration=0.1, crawl_delay=500.0)
    seventh = await visit(politeness, clock, "a.test", duration=0.1)
    assert sixth.start - fifth.end == pytest.approx(20.0)  # the new delay, capped at max_crawl_delay
    assert seventh.start - sixth.end == pytest.approx(20.0)


async def test_a_gap_margin_is_added_to_every_gap() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=2.0, response_time_factor=10.0, gap_margin=0.05)
    first = await visit(politeness, clock, "a.test", duration=0.1)
    second = await visit(politeness, clock, "a.test", duration=0.5)  # waits min_delay + margin
    third = await visit(politeness, clock, "a.test", duration=0.1)  # waits 10 x 0.5 + margin
    fourth = await visit(politeness, clock, "a.test", duration=0.1, crawl_delay=3.0)
    assert second.start - first.end == pytest.approx(2.05)
    assert third.start - second.end == pytest.approx(5.05)
    assert fourth.start - third.end == pytest.approx(3.05)


async def test_concurrent_callers_keep_the_gap_and_one_request_in_flight() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=3.0, response_time_factor=0.0)
    in_flight = 0
    most = 0

    async def worker(i: int) -> Visit:
        nonlocal in_flight, most
        async with politeness.slot("a.test") as slot:
            in_flight += 1
            most = max(most, in_flight)
            start = clock.now()
            await clock.sleep(1.0)
            in_flight -= 1
            slot.record(1.0, 200, None, False)
            return Visit(str(i), start, clock.now())

    visits = await asyncio.gather(*(worker(i) for i in range(6)))
    assert most == 1
    visits = sorted(visits, key=lambda v: v.start)
    for before, after in itertools.pairwise(visits):
        assert after.start - before.end == pytest.approx(3.0)
    assert visits[-1].end == pytest.approx(6 * 1.0 + 5 * 3.0)


async def test_hosts_do_not_wait_for_each_other() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=100.0)
    visits = await asyncio.gather(*(visit(politeness, clock, f"h{i}.test", duration=1.0) for i in range(5)))
    assert [v.start for v in visits] == [0.0] * 5


async def test_waiters_are_served_first_in_first_out() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0)
    log: list[Visit] = []
    tasks = []
    for name in "abcdef":
        tasks.append(asyncio.create_task(visit(politeness, clock, "a.test", name, log=log)))
        await asyncio.sleep(0)  # let it join the queue before the next one
    await asyncio.gather(*tasks)
    assert [v.name for v in log] == list("abcdef")


async def test_retry_after_blocks_the_host_until_then() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0, park_after_failures=10)
    limited = await visit(politeness, clock, "a.test", status=429, retry_after=120.0)
    assert politeness.next_allowed_at("a.test") == pytest.approx(limited.end + 120.0)
    after = await visit(politeness, clock, "a.test", status=503, retry_after=30.0)
    assert after.start - limited.end == pytest.approx(120.0)
    again = await visit(politeness, clock, "a.test")
    assert again.start - after.end == pytest.approx(30.0)
    # Retry-After on other statuses is not a block.
    ok = await visit(politeness, clock, "a.test", status=200, retry_after=500.0)
    last = await visit(politeness, clock, "a.test")
    assert last.start - ok.end == pytest.approx(1.0)
    assert again.start - after.end == pytest.approx(30.0)


async def test_consecutive_failures_back_off_exponentially_up_to_the_cap() -> None:
    clock = FakeClock()
    politeness = make(
        clock, min_delay=0.5, response_time_factor=0.0, max_backoff=5.0, backoff_base=1.0, park_after_failures=10
    )
    gaps = []
    previous = await visit(politeness, clock, "a.test", error=True)
    for _ in range(5):
        current = await visit(politeness, clock, "a.test", status=500)
        gaps.append(round(current.start - previous.end, 6))
        previous = current
    assert gaps == [1.0, 2.0, 4.0, 5.0, 5.0]
    recovered = await visit(politeness, clock, "a.test", status=200)
    assert recovered.start - previous.end == pytest.approx(5.0)
    after_success = await visit(politeness, clock, "a.test")
    assert after_success.start - recovered.end == pytest.approx(0.5)


async def test_4xx_is_not_a_host_failure() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0, park_after_failures=2)
    for _ in range(5):
        await visit(politeness, clock, "a.test", status=404)
    assert politeness.parked_hosts() == []


async def test_a_host_with_too_many_failures_is_parked_then_probed() -> None:
    clock = FakeClock()
    politeness = make(
        clock, min_delay=1.0, response_time_factor=0.0, max_backoff=2.0, park_after_failures=3, park_duration=300.0
    )
    for _ in range(3):
        last = await visit(politeness, clock, "bad.test", error=True)
    parked = politeness.parked_hosts()
    assert [p.host for p in parked] == ["bad.test"]
    assert parked[0].until == pytest.approx(last.end + 300.0)
    assert "3 consecutive failures" in parked[0].reason
    assert politeness.next_allowed_at("bad.test") == pytest.approx(last.end + 300.0)
    with pytest.raises(HostParkedError) as refused:
        async with politeness.slot("bad.test"):
            pytest.fail("a parked host must not be granted")
    assert "parked" in refused.value.reason
    assert refused.value.retry_at == pytest.approx(last.end + 300.0)
    # Other hosts are unaffected.
    await visit(politeness, clock, "good.test")
    # After the park, one probe goes through; another failure parks the host again at once.
    clock.set(last.end + 300.0)
    assert politeness.parked_hosts() == []
    probe = await visit(politeness, clock, "bad.test", status=503)
    assert politeness.parked_hosts()[0].until == pytest.approx(probe.end + 300.0)
    clock.set(probe.end + 300.0)
    await visit(politeness, clock, "bad.test", status=200)
    await visit(politeness, clock, "bad.test", error=True)
    assert politeness.parked_hosts() == []  # the success cleared the record
    assert politeness.stats.parked == 2


async def test_queued_waiters_are_refused_when_the_host_gets_parked() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, park_after_failures=1)
    results = await asyncio.gather(
        visit(politeness, clock, "a.test", error=True),
        visit(politeness, clock, "a.test"),
        visit(politeness, clock, "a.test"),
        return_exceptions=True,
    )
    assert isinstance(results[0], Visit)
    assert all(isinstance(r, HostParkedError) for r in results[1:])


async def test_max_wait_refuses_instead_of_waiting_forever() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0, park_after_failures=10)
    await visit(politeness, clock, "a.test", status=429, retry_after=3600.0)
    started = clock.now()
    with pytest.raises(PolitenessTimeoutError):
        async with politeness.slot("a.test", max_wait=60.0):
            pytest.fail("must not be granted")
    assert clock.now() == started  # refused at once: the block is known to outlast max_wait

    # Behind a request that takes too long, the wait ends at max_wait on the clock.
    other = make(clock, min_delay=1.0, response_time_factor=0.0)
    hold = asyncio.create_task(visit(other, clock, "b.test", duration=500.0))
    await asyncio.sleep(0)
    waited_from = clock.now()
    with pytest.raises(PolitenessTimeoutError):
        async with other.slot("b.test", max_wait=50.0):
            pytest.fail("must not be granted")
    assert clock.now() - waited_from == pytest.approx(50.0)
    await hold


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=5.0, response_time_factor=0.0)
    log: list[Visit] = []
    first = asyncio.create_task(visit(politeness, clock, "a.test", "first", duration=1.0, log=log))
    await asyncio.sleep(0)
    second = asyncio.create_task(visit(politeness, clock, "a.test", "second", log=log))
    await asyncio.sleep(0)
    third = asyncio.create_task(visit(politeness, clock, "a.test", "third", log=log))
    await asyncio.sleep(0)
    second.cancel()
    await asyncio.gather(first, third)
    assert [v.name for v in log] == ["first", "third"]
    assert log[1].start - log[0].end == pytest.approx(5.0)


async def test_leaving_without_record_still_spaces_the_next_request() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=4.0, park_after_failures=1)
    with pytest.raises(RuntimeError):
        async with politeness.slot("a.test"):
            await clock.sleep(1.0)
            raise RuntimeError("caller failed")
    end = clock.now()
    assert politeness.parked_hosts() == []
    after = await visit(politeness, clock, "a.test")
    assert after.start - end == pytest.approx(4.0)


async def test_seeded_state_delays_the_first_request() -> None:
    clock = FakeClock(start=100.0)
    politeness = make(clock, min_delay=2.0)
    politeness.seed_host_state("a.test", last_fetch_end=99.5, crawl_delay=10.0)
    assert politeness.next_allowed_at("a.test") == pytest.approx(109.5)
    first = await visit(politeness, clock, "A.TEST")
    assert first.start == pytest.approx(109.5)
    assert politeness.next_allowed_at("unknown.test") == clock.now()


async def test_several_requests_in_flight_when_allowed() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0, max_in_flight_per_host=2)
    visits = await asyncio.gather(*(visit(politeness, clock, "a.test", duration=10.0) for _ in range(3)))
    starts = sorted(v.start for v in visits)
    assert starts[0] == 0.0
    assert starts[1] == pytest.approx(1.0)  # not before min_delay after the previous start
    # A place frees at 10, but the second request ends at 11: every end is followed by min_delay.
    assert starts[2] == pytest.approx(12.0)


async def test_idle_hosts_are_forgotten_beyond_max_hosts() -> None:
    clock = FakeClock()
    politeness = make(clock, min_delay=1.0, response_time_factor=0.0, max_hosts=10)
    for i in range(10):
        await visit(politeness, clock, f"h{i}.test", duration=0.0)
    clock.advance(5.0)
    await visit(politeness, clock, "new.test", duration=0.0)
    assert len(politeness) == 1
    assert politeness.forget("new.test")
    assert len(politeness) == 0


async def test_try_enter_grants_a_free_host_at_once_and_nothing_else() -> None:
    clock = FakeClock()
    politeness = make(clock)
    slot = politeness.try_enter("A.test")
    assert slot is not None and slot.host == "a.test"
    assert politeness.try_enter("a.test") is None  # one request in flight
    slot.record(0.1, 200, None, False)
    politeness.leave(slot)
    assert politeness.try_enter("a.test") is None  # the gap: max(1 s, 10 x 0.1 s)
    clock.advance(1.0)
    again = politeness.try_enter("a.test")
    assert again is not None
    politeness.leave(again)
    assert politeness.stats.granted == 2


async def test_try_enter_leaves_a_waiting_or_parked_host_to_enter() -> None:
    clock = FakeClock()
    politeness = make(clock, park_after_failures=1)
    await visit(politeness, clock, "b.test", error=True, status=0)
    clock.advance(100)  # past the backoff, within the park
    assert politeness.try_enter("b.test") is None
    with pytest.raises(HostParkedError):
        await politeness.enter("b.test")
    held = politeness.try_enter("c.test")
    assert held is not None
    waiter = asyncio.ensure_future(politeness.enter("c.test"))  # queued behind the holder
    await asyncio.sleep(0)
    politeness.leave(held)
    assert politeness.try_enter("c.test") is None  # the queued caller comes first
    clock.advance(1.0)
    politeness.leave(await waiter)
