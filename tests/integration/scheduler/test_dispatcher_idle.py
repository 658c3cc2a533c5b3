"""The dispatch loop with nothing ready: it sleeps until a host's gap, a retry or a revisit comes due, or it is woken,
rather than running a round every dispatch interval (real database and broker)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from libs.common.db.pool import Database
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.localinfra import create_topics
from services.scheduler.admin.pause import PauseFlag
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.dispatcher import Dispatcher
from services.scheduler.frontier.store import FrontierStore, NewUrl
from services.scheduler.settings import SchedulerSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

AHEAD = 0.3


@pytest.fixture
async def producer(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> AsyncIterator[TopicProducer]:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".")
    create_topics(kafka.bootstrap, [(kafka.topic(FETCH_REQUESTS.name), FETCH_REQUESTS.partitions)])
    sender = TopicProducer(kafka, "scheduler-idle-test")
    await sender.start()
    try:
        yield sender
    finally:
        await sender.stop()


@pytest.fixture
async def running(
    scheduler_db: Database, goal_sites: GoalSites, producer: TopicProducer
) -> AsyncIterator[Callable[[], Awaitable[Dispatcher]]]:
    """Starts a dispatcher, its longest sleep (5 s) far past the tests' times, once the test has set the frontier."""
    store = FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, dispatch_ahead=AHEAD)
    settings = load_settings(SchedulerSettings, {}, dispatch_interval=0.05, dispatch_idle_max=5.0)
    dispatcher = Dispatcher(store, producer, settings, lambda: set(range(FETCH_REQUESTS.partitions)), goal_sites,
                            PauseFlag(scheduler_db))
    started: list[Dispatcher] = []

    async def start() -> Dispatcher:
        started.append(dispatcher)
        await dispatcher.start()
        return dispatcher

    try:
        yield start
    finally:
        if started:
            await dispatcher.stop()


def new(url: str) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1)


async def sql(db: Database, statement: str) -> None:
    async with db.transaction() as conn:
        await conn.execute(statement.encode())


async def dispatched_after(dispatcher: Dispatcher, count: int, started: float, timeout: float = 3.0) -> float:
    """Seconds from ``started`` until ``count`` requests were sent."""
    while dispatcher.dispatched < count:
        assert time.monotonic() - started < timeout, f"{dispatcher.dispatched} of {count} sent in {timeout} s"
        await asyncio.sleep(0.005)
    return time.monotonic() - started


async def test_a_host_waiting_for_its_gap_gets_one_round_ahead_of_it_not_one_every_interval(
    scheduler_db: Database, running: Callable[[], Awaitable[Dispatcher]]
) -> None:
    frontier = FrontierStore(scheduler_db, FETCH_REQUESTS.partitions)
    await frontier.add_urls([new("http://a.example/")])
    await sql(scheduler_db, "UPDATE scheduler.hosts SET next_allowed_at = now() + interval '1.1 s'")
    started = time.monotonic()
    dispatcher = await running()
    took = await dispatched_after(dispatcher, 1, started)
    # Not before the gap less the window; long before the 5 s sleep cap (margins for a loaded machine).
    assert 1.1 - AHEAD - 0.05 <= took <= 1.1 - AHEAD + 0.5
    rounds_then = dispatcher.rounds
    assert rounds_then <= 3  # the first, the one at the host's time (and maybe one at the interval's floor)
    await asyncio.sleep(1.0)
    assert dispatcher.rounds == rounds_then  # nothing queued, nothing planned: no round until woken


async def test_a_retry_or_a_revisit_coming_due_and_a_wake_each_start_a_round_promptly(
    scheduler_db: Database, running: Callable[[], Awaitable[Dispatcher]]
) -> None:
    frontier = FrontierStore(scheduler_db, FETCH_REQUESTS.partitions)
    await frontier.add_urls([new("http://retry.example/"), new("http://revisit.example/")])
    await sql(scheduler_db, "UPDATE scheduler.frontier SET next_fetch_at = now() + interval '0.5 s'"
              " WHERE host = 'retry.example'")
    await sql(scheduler_db, "UPDATE scheduler.frontier SET status = 'fetched', next_fetch_at = now() + interval '1 s'"
              " WHERE host = 'revisit.example'")
    started = time.monotonic()
    dispatcher = await running()
    assert 0.45 <= await dispatched_after(dispatcher, 1, started) <= 1.0  # the sleep cap is 5 s
    assert 0.95 <= await dispatched_after(dispatcher, 2, started) <= 1.5
    assert dispatcher.rounds <= 5

    await asyncio.sleep(0.5)
    rounds = dispatcher.rounds
    await frontier.add_urls([new("http://new.example/")])
    woken = time.monotonic()
    dispatcher.wake()  # as the handlers do when URLs are queued or outcomes free hosts
    assert await dispatched_after(dispatcher, 3, woken) <= 0.5  # unwoken, it would sleep the 5 s cap
    assert dispatcher.rounds <= rounds + 2
