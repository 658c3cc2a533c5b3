"""When the next dispatch round can find something, on the real database: the earliest host, head or revisit."""

from __future__ import annotations

import pytest

from libs.common.db.pool import Database
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from services.scheduler.frontier.store import FrontierStore, NewUrl

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(FETCH_REQUESTS.partitions))
AHEAD = 0.3


def new(url: str) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1)


async def sql(db: Database, statement: str, host: str) -> None:
    async with db.transaction() as conn:
        await conn.execute(statement.encode(), (host,))


async def wait_host(db: Database, host: str, seconds: float) -> None:
    await sql(db, f"UPDATE scheduler.hosts SET next_allowed_at = now() + interval '{seconds} s' WHERE host = %s", host)


@pytest.fixture
def store(scheduler_db: Database) -> FrontierStore:
    return FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, dispatch_ahead=AHEAD, queue_depth=2,
                         behind_max_gap=0.5)


async def test_nothing_queued_or_planned_is_never_due(store: FrontierStore) -> None:
    assert await store.seconds_until_due(ALL) is None
    await store.add_urls([new("http://a.example/")])
    assert len(await store.dispatch(10, ALL)) == 1
    assert await store.seconds_until_due(ALL) is None  # its host waits for the outcome, which wakes the loop


async def test_a_waiting_host_is_due_ahead_of_its_gap_unless_held_or_not_owned(
    store: FrontierStore, scheduler_db: Database
) -> None:
    await store.add_urls([new("http://a.example/"), new("http://b.example/")])
    await wait_host(scheduler_db, "a.example", 2.0)
    await wait_host(scheduler_db, "b.example", 5.0)
    await store.dispatch(10, ALL)  # heads refreshed; neither host is free
    due = await store.seconds_until_due(ALL)
    assert due is not None and 2.0 - AHEAD - 0.2 < due <= 2.0 - AHEAD
    held = await store.seconds_until_due(ALL, held=["a.example"])
    assert held is not None and 5.0 - AHEAD - 0.2 < held <= 5.0 - AHEAD
    theirs = {partition_for(h, FETCH_REQUESTS.partitions) for h in ("a.example", "b.example")}
    others = [p for p in ALL if p not in theirs]
    assert await store.seconds_until_due(others) is None


async def test_a_host_with_a_request_out_counts_only_with_room_behind_it(
    store: FrontierStore, scheduler_db: Database
) -> None:
    await store.add_urls([new("http://a.example/1"), new("http://a.example/2"), new("http://a.example/3")])
    assert len(await store.dispatch(10, ALL)) == 1
    await wait_host(scheduler_db, "a.example", 2.0)
    await sql(scheduler_db, "UPDATE scheduler.hosts SET gap_seconds = 0.2 WHERE host = %s", "a.example")
    due = await store.seconds_until_due(ALL)  # a second request may wait at the fetcher behind the first
    assert due is not None and 1.5 < due <= 2.0 - AHEAD
    await sql(scheduler_db, "UPDATE scheduler.hosts SET gap_seconds = 1 WHERE host = %s", "a.example")
    assert await store.seconds_until_due(ALL) is None  # a long gap: its next URL is chosen at the outcome


async def test_a_retry_backing_off_and_a_planned_revisit_are_due_at_their_times(
    store: FrontierStore, scheduler_db: Database
) -> None:
    await store.add_urls([new("http://a.example/"), new("http://b.example/")])
    await sql(scheduler_db, "UPDATE scheduler.frontier SET next_fetch_at = now() + interval '3 s' WHERE host = %s",
              "a.example")
    await sql(scheduler_db, "UPDATE scheduler.frontier SET status = 'fetched',"
              " next_fetch_at = now() + interval '4 s' WHERE host = %s", "b.example")
    assert await store.dispatch(10, ALL) == []
    due = await store.seconds_until_due(ALL)
    assert due is not None and 2.8 < due <= 3.0
    await sql(scheduler_db, "DELETE FROM scheduler.frontier WHERE host = %s", "a.example")
    await store.dispatch(10, ALL)
    due = await store.seconds_until_due(ALL)
    assert due is not None and 3.8 < due <= 4.0
