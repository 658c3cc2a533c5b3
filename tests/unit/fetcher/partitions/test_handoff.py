"""Partition ownership in the fetcher: inherited requests wait, revoked partitions are settled."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import web

from libs.common.kafka.consumer import Record
from libs.common.topics import FETCH_REQUESTS
from libs.common.wire import messages as pb
from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.partitions.handoff import CLOCK_SKEW_MS, Handoff
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.robots.robots import RobotsCache

HANDOFF_DELAY = 30.0


def record(url: str, *, partition: int = 0, produced_ms: int | None = None, stamp_ms: int = 0) -> Record[Any]:
    host = url.split("/")[2].split(":")[0]
    request = pb.FetchRequest(request_id="r", url=url, host=host, host_not_before_ms=stamp_ms)
    at = int(time.time() * 1000) if produced_ms is None else produced_ms
    return Record(FETCH_REQUESTS, partition, 0, host, request, at, host.encode(), request.SerializeToString())


@pytest.fixture
async def setup(serve, make_fetcher) -> tuple[FetchCore, Handoff, list[str], Any]:
    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.query.get("sleep", "0")))
        return web.Response(text="<p>x</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/p", page)
    server = await serve(app)
    clock = SystemClock()
    http = await make_fetcher(clock=clock, host_map={"a.test": "127.0.0.1", "b.test": "127.0.0.1"},
                              total_timeout=30.0)
    politeness = HostPoliteness(clock, min_delay=0.1, max_crawl_delay=30, response_time_factor=0,
                                max_backoff=1, park_after_failures=3)
    robots = RobotsCache(polite_robots_fetch(http, politeness), user_agent_token="trawl", clock=clock)
    core = FetchCore(http, robots, politeness, clock)
    flushes: list[str] = []

    async def flush() -> None:
        flushes.append("flush")

    handoff = Handoff(core, clock, flush, handoff_delay=HANDOFF_DELAY, grace=0.3)
    handoff.assigned([("trawl.fetch-requests", 0)])
    return core, handoff, flushes, server


async def test_a_request_produced_before_the_assignment_holds_its_host_for_the_handoff_delay(setup) -> None:
    core, handoff, _flushes, server = setup
    now = time.monotonic()
    assert await handoff.admit(record(f"http://a.test:{server.port}/p", produced_ms=int(time.time() * 1000) - 60_000))
    assert core.next_allowed_at("a.test") >= now + HANDOFF_DELAY - 1
    fresh = int(time.time() * 1000) + CLOCK_SKEW_MS + 1000  # produced after the assignment
    assert await handoff.admit(record(f"http://b.test:{server.port}/p", produced_ms=fresh))
    assert core.next_allowed_at("b.test") <= time.monotonic()
    assert handoff.inherited == 1


async def test_a_stamped_request_holds_its_host_until_the_stamp(setup) -> None:
    core, handoff, _flushes, server = setup
    fresh = int(time.time() * 1000) + CLOCK_SKEW_MS + 1000
    stamp = int(time.time() * 1000) + 500_000
    assert await handoff.admit(record(f"http://b.test:{server.port}/p", produced_ms=fresh, stamp_ms=stamp))
    assert core.next_allowed_at("b.test") >= time.monotonic() + 400


async def test_revoking_settles_requests_in_hand_and_refuses_later_ones(setup) -> None:
    core, handoff, flushes, server = setup
    fresh = int(time.time() * 1000) + CLOCK_SKEW_MS + 1000

    async def job(rec: Record[Any]) -> str:
        try:
            if not await handoff.admit(rec):
                return "not owned"
            return (await core.fetch(rec.value.url)).outcome
        finally:
            handoff.finish(rec)

    quick = asyncio.ensure_future(job(record(f"http://a.test:{server.port}/p?sleep=0.1", produced_ms=fresh)))
    slow = asyncio.ensure_future(job(record(f"http://b.test:{server.port}/p?sleep=20", produced_ms=fresh)))
    while len(server.requests) < 4:  # robots.txt and the page of each host are on the wire
        await asyncio.sleep(0.01)
    waiting = asyncio.ensure_future(job(record(f"http://a.test:{server.port}/p", produced_ms=fresh)))
    await asyncio.sleep(0.05)
    await handoff.revoking([("trawl.fetch-requests", 0)])
    assert await quick == "ok"  # finished within the grace
    assert await slow == "handed_over"  # cut short after the grace
    assert await waiting == "handed_over"  # never sent
    assert flushes == ["flush"]
    assert not await handoff.admit(record(f"http://a.test:{server.port}/p", produced_ms=fresh))
    assert len(server.requests) == 4
    # The cut-short request counts until it was cut: the host's next request waits the gap from then.
    assert handoff.stamp_ms("b.test") >= int(time.time() * 1000) - 50


class Finished:
    """What the outcome and result topics say was finished: request "done" of partition 0."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, str]] = []

    async def finished(self, partition: int, assigned_at_ms: int, request_id: str, produced_ms: int) -> bool:
        self.asked.append((partition, request_id))
        return partition == 0 and request_id == "done"


def with_id(rec: Record[Any], request_id: str) -> Record[Any]:
    rec.value.request_id = request_id
    return rec


async def test_only_inherited_requests_are_looked_up_as_finished_by_the_previous_owner(
    setup: tuple[FetchCore, Handoff, list[str], Any],
) -> None:
    core, _handoff, _flushes, server = setup
    finished = Finished()
    handoff = Handoff(core, SystemClock(), lambda: asyncio.sleep(0), handoff_delay=HANDOFF_DELAY, grace=0.3,
                      finished=finished)  # type: ignore[arg-type]  # the topics' answer, without a broker
    handoff.assigned([("trawl.fetch-requests", 0)])
    old = int(time.time() * 1000) - 60_000
    url = f"http://a.test:{server.port}/p"
    assert await handoff.finished_before(with_id(record(url, produced_ms=old), "done"))
    assert not await handoff.finished_before(with_id(record(url, produced_ms=old), "other"))
    fresh = int(time.time() * 1000) + CLOCK_SKEW_MS + 1000  # produced after the assignment: not inherited
    assert not await handoff.finished_before(with_id(record(url, produced_ms=fresh), "done"))
    assert not await handoff.finished_before(with_id(record(url, partition=3, produced_ms=old), "done"))  # not owned
    assert finished.asked == [(0, "done"), (0, "other")]
