"""Large hosts in the real database: one request in flight per slot, starts spaced by the host's gap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from libs.common.db.pool import Database
from libs.common.urls import url_fingerprint, url_host
from services.scheduler.frontier.store import Dispatched, FrontierStore, NewUrl, Outcome

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(12))


def new(url: str) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1)


def ended(sent: Dispatched, status: str, next_allowed: datetime | None) -> Outcome:
    return Outcome(
        sent.url_fp, sent.request_id, sent.host, status, 200, "FETCH_STATUS_OK", "", datetime.now(UTC), next_allowed
    )


async def host(db: Database, name: str) -> dict[str, Any]:
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT slots, in_flight, gap_seconds, extract(epoch FROM next_allowed_at - now())::float8 AS wait"
            " FROM scheduler.hosts WHERE host = %s",
            (name,),
        )
        row = await cur.fetchone()
        assert row is not None and cur.description is not None
        return {c.name: v for c, v in zip(cur.description, row, strict=True)}


async def backdate(db: Database, name: str) -> None:
    """The host's gap has passed (instead of waiting for it)."""
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE scheduler.hosts SET next_allowed_at = now() - interval '1 s' WHERE host = %s", (name,)
        )


async def test_slots_are_set_for_large_hosts_and_reset_for_the_others(
    frontier: FrontierStore, scheduler_db: Database
) -> None:
    await frontier.add_urls([new("http://small.example/")])
    await frontier.set_host_slots(["big.example", "small.example"], 3)
    assert (await host(scheduler_db, "big.example"))["slots"] == 3
    await frontier.set_host_slots(["big.example"], 2)
    assert (await host(scheduler_db, "big.example"))["slots"] == 2
    assert (await host(scheduler_db, "small.example"))["slots"] == 1


async def test_a_large_host_gets_a_second_slot_once_its_gap_is_known(
    frontier: FrontierStore, scheduler_db: Database
) -> None:
    await frontier.set_host_slots(["big.example"], 2)
    await frontier.add_urls([new(f"http://big.example/s{i}/") for i in range(5)])
    first = await frontier.dispatch(100, ALL)
    assert len(first) == 1
    assert await frontier.dispatch(100, ALL) == []  # the gap is not known yet: one slot only
    gap = 30.0
    await frontier.apply_outcomes([ended(first[0], "fetched", datetime.now(UTC) + timedelta(seconds=gap))], 3, 60.0)
    after = await host(scheduler_db, "big.example")
    assert after["in_flight"] == 0 and after["gap_seconds"] == pytest.approx(gap, abs=1.0)
    assert after["wait"] <= 0  # the fetcher's clock is its group's own, not the host's

    second = await frontier.dispatch(100, ALL)
    assert len(second) == 1
    assert (await host(scheduler_db, "big.example"))["wait"] == pytest.approx(gap, abs=2.0)  # the next start waits
    assert await frontier.dispatch(100, ALL) == []
    await backdate(scheduler_db, "big.example")
    third = await frontier.dispatch(100, ALL)
    assert len(third) == 1 and (await host(scheduler_db, "big.example"))["in_flight"] == 2
    await backdate(scheduler_db, "big.example")
    assert await frontier.dispatch(100, ALL) == []  # both slots in flight


async def test_an_error_s_backoff_holds_every_slot(frontier: FrontierStore, scheduler_db: Database) -> None:
    await frontier.set_host_slots(["big.example"], 2)
    await frontier.add_urls([new(f"http://big.example/s{i}/") for i in range(3)])
    (sent,) = await frontier.dispatch(100, ALL)
    await frontier.apply_outcomes([ended(sent, "retry", datetime.now(UTC) + timedelta(seconds=120))], 3, 60.0)
    assert (await host(scheduler_db, "big.example"))["wait"] == pytest.approx(120, abs=2.0)
    assert await frontier.dispatch(100, ALL) == []


async def test_an_ordinary_host_keeps_one_request_in_flight(frontier: FrontierStore, scheduler_db: Database) -> None:
    await frontier.add_urls([new(f"http://small.example/s{i}/") for i in range(3)])
    (sent,) = await frontier.dispatch(100, ALL)
    assert await frontier.dispatch(100, ALL) == []
    await frontier.apply_outcomes([ended(sent, "fetched", datetime.now(UTC) + timedelta(seconds=30))], 3, 60.0)
    assert (await host(scheduler_db, "small.example"))["wait"] == pytest.approx(30, abs=2.0)
    assert await frontier.dispatch(100, ALL) == []


async def test_queued_urls_are_counted_per_first_path_segment(frontier: FrontierStore) -> None:
    urls = [
        "http://big.example/",
        "http://big.example/a.html",
        "http://big.example/news/1",
        "http://big.example/news/",
        "http://big.example/sport/x/y?q=1",
        "http://big.example/q?x=/a/",
        "http://other.example/news/1",
    ]
    await frontier.add_urls([new(u) for u in urls])
    assert await frontier.queued_path_counts("big.example") == {"": 3, "news": 2, "sport": 1}


async def test_a_queue_of_two_hands_out_a_hosts_next_request_before_the_outcome(scheduler_db: Database) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=2)
    await frontier.add_urls([new(f"http://small.example/q{i}/") for i in range(4)] + [new("http://other.example/")])
    first = await frontier.dispatch(100, ALL)
    assert sorted(d.host for d in first) == ["other.example", "small.example"]  # one per host and round
    (second,) = await frontier.dispatch(100, ALL)  # waits at the fetcher for the host's gap
    assert second.host == "small.example"
    assert (await host(scheduler_db, "small.example"))["in_flight"] == 2
    assert await frontier.dispatch(100, ALL) == []  # the queue is full
    sent = next(d for d in first if d.host == "small.example")
    await frontier.apply_outcomes([ended(sent, "fetched", datetime.now(UTC) + timedelta(seconds=30))], 3, 60.0)
    assert (await host(scheduler_db, "small.example"))["in_flight"] == 1
    assert await frontier.dispatch(100, ALL) == []  # not before the fetcher's next allowed time
    await backdate(scheduler_db, "small.example")
    (third,) = await frontier.dispatch(100, ALL)
    assert third.host == "small.example" and third.url_fp not in {sent.url_fp, second.url_fp}


@pytest.mark.parametrize(("gap", "queued_behind"), [(0.2, True), (1.0, False)])
async def test_only_a_host_with_a_short_gap_gets_a_request_queued_behind_the_one_out(
    scheduler_db: Database, gap: float, queued_behind: bool
) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=2, behind_max_gap=0.5)
    await frontier.add_urls([new(f"http://small.example/q{i}/") for i in range(5)])
    first, second = (await frontier.dispatch(100, ALL))[0], (await frontier.dispatch(100, ALL))[0]  # gap unknown
    await frontier.apply_outcomes([ended(first, "fetched", datetime.now(UTC) + timedelta(seconds=gap))], 3, 60.0)
    await backdate(scheduler_db, "small.example")
    behind = await frontier.dispatch(100, ALL)  # one out (second): another only if its gap is short
    assert [d.host for d in behind] == (["small.example"] if queued_behind else [])
    if not queued_behind:  # the long-gap host's next URL is chosen once its outcome is back
        await frontier.apply_outcomes([ended(second, "fetched", datetime.now(UTC))], 3, 60.0)
        (third,) = await frontier.dispatch(100, ALL)
        assert third.url_fp not in {first.url_fp, second.url_fp}


async def test_a_host_is_handed_its_next_request_ahead_of_its_gap(scheduler_db: Database) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=2, dispatch_ahead=5.0)
    await frontier.add_urls([new(f"http://small.example/q{i}/") for i in range(4)])
    first, second = (await frontier.dispatch(100, ALL))[0], (await frontier.dispatch(100, ALL))[0]
    next_allowed = datetime.now(UTC) + timedelta(seconds=3)
    await frontier.apply_outcomes([ended(first, "fetched", next_allowed)], 3, 60.0)
    (third,) = await frontier.dispatch(100, ALL)  # its gap ends within 5 s: the fetcher holds it until then
    assert third.url_fp not in {first.url_fp, second.url_fp}
    assert third.host_not_before == next_allowed  # what the fetcher is told to hold it until
    assert first.host_not_before is not None and first.host_not_before <= datetime.now(UTC)
    await frontier.apply_outcomes([ended(second, "fetched", datetime.now(UTC) + timedelta(seconds=30))], 3, 60.0)
    assert await frontier.dispatch(100, ALL) == []  # 30 s away: not yet


async def test_a_large_host_is_not_handed_requests_ahead_of_its_shared_gap(scheduler_db: Database) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=2, dispatch_ahead=5.0)
    await frontier.set_host_slots(["big.example"], 2)
    await frontier.add_urls([new(f"http://big.example/p{i}") for i in range(6)])
    (sent,) = await frontier.dispatch(100, ALL)
    await frontier.apply_outcomes([ended(sent, "fetched", datetime.now(UTC) + timedelta(seconds=3))], 3, 60.0)
    async with scheduler_db.transaction() as conn:  # the next start its shared token allows: in 3 s
        await conn.execute("UPDATE scheduler.hosts SET next_allowed_at = now() + interval '3 s'"
                           " WHERE host = 'big.example'")
    assert await frontier.dispatch(100, ALL) == []  # its slots share the scheduler's token: strictly after the gap
    await backdate(scheduler_db, "big.example")
    assert len(await frontier.dispatch(100, ALL)) == 1


async def test_a_queue_depth_leaves_a_large_hosts_slots_as_they_are(scheduler_db: Database) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=3)
    await frontier.set_host_slots(["big.example"], 2)
    await frontier.add_urls([new(f"http://big.example/p{i}") for i in range(6)])
    assert len(await frontier.dispatch(100, ALL)) == 1
    assert await frontier.dispatch(100, ALL) == []  # its second slot waits for a known gap, as before


def test_a_queue_depth_is_at_least_one(scheduler_db: Database) -> None:
    with pytest.raises(ValueError):
        FrontierStore(scheduler_db, len(ALL), queue_depth=0)


async def test_expired_leases_give_a_host_back_every_request_it_had_out(scheduler_db: Database) -> None:
    frontier = FrontierStore(scheduler_db, len(ALL), queue_depth=2)
    await frontier.add_urls([new(f"http://small.example/q{i}/") for i in range(4)])
    assert len([*await frontier.dispatch(100, ALL), *await frontier.dispatch(100, ALL)]) == 2
    assert (await host(scheduler_db, "small.example"))["in_flight"] == 2
    assert await frontier.expire_leases(0.0) == 2  # both lost (a fetcher died with them)
    assert (await host(scheduler_db, "small.example"))["in_flight"] == 0
    assert len(await frontier.dispatch(100, ALL)) == 1  # the host is free again, not held by a stale count
