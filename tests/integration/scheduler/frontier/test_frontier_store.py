"""The frontier store on the real database: admission, dispatch by host, outcomes, leases, pause."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from libs.common.db.pool import Database
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import FETCH_REQUESTS
from libs.common.url_keys import first_directory
from libs.common.urls import normalize_url, url_fingerprint, url_host
from libs.common.wire import messages as pb
from services.scheduler.frontier.store import Dispatched, FrontierStore, NewUrl, Outcome, Priority
from services.scheduler.handlers import frontier_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

PARTITIONS = FETCH_REQUESTS.partitions
ALL = list(range(PARTITIONS))
MAX_ATTEMPTS = 3
RETRY_BASE = 60.0


def hosts_in_distinct_partitions(count: int) -> list[str]:
    by_partition: dict[int, str] = {}
    i = 0
    while len(by_partition) < count:
        host = f"h{i}.example"
        by_partition.setdefault(partition_for(host, PARTITIONS), host)
        i += 1
    return list(by_partition.values())


def new_url(url: str, depth: int = 0, source: str = "link") -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), depth, source)


def priority(url: str, value: float) -> Priority:
    return Priority(url_fingerprint(url), url, url_host(url), value)


def outcome(
    sent: Dispatched,
    status: pb.FetchStatus.ValueType,
    *,
    retryable: bool = False,
    request_id: str | None = None,
    host_next_allowed_at: datetime | None = None,
) -> Outcome:
    """The outcome the scheduler's handler would derive from a fetcher's FetchOutcome."""
    msg = pb.FetchOutcome(request_id=sent.request_id, url=sent.url, status=status, retryable=retryable)
    return Outcome(
        url_fp=sent.url_fp,
        request_id=sent.request_id if request_id is None else request_id,
        host=sent.host,
        status=frontier_status(msg),
        http_status=503 if retryable else 200,
        outcome=pb.FetchStatus.Name(status),
        error="unavailable" if retryable else "",
        fetched_at=datetime.now(UTC),
        host_next_allowed_at=host_next_allowed_at,
    )


async def row(db: Database, url: str) -> dict[str, Any]:
    """The frontier row of ``url``, with ``wait``: seconds from now until it may be fetched."""
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT *, extract(epoch from next_fetch_at - now())::float8 AS wait FROM scheduler.frontier"
            " WHERE url_fp = %s",
            (url_fingerprint(url),),
        )
        found = await cur.fetchone()
        assert found is not None and cur.description is not None, url
        return {col.name: value for col, value in zip(cur.description, found, strict=True)}


async def host_row(db: Database, host: str) -> dict[str, Any]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT * FROM scheduler.hosts WHERE host = %s", (host,))
        found = await cur.fetchone()
        assert found is not None and cur.description is not None, host
        return {col.name: value for col, value in zip(cur.description, found, strict=True)}


async def make_ready(db: Database) -> None:
    """Lets time pass for backoffs and politeness delays."""
    async with db.transaction() as conn:
        await conn.execute("UPDATE scheduler.frontier SET next_fetch_at = now() WHERE next_fetch_at > now()")
        await conn.execute("UPDATE scheduler.hosts SET next_allowed_at = now() WHERE next_allowed_at > now()")


# -- admission ----------------------------------------------------------------------


async def test_add_urls_is_idempotent(frontier: FrontierStore, scheduler_db: Database) -> None:
    urls = [new_url("http://a.example/"), new_url("http://a.example/x", 2), new_url("http://b.example/", 1)]

    assert await frontier.add_urls(urls) == 3
    assert await frontier.add_urls(urls) == 0
    assert await frontier.add_urls([]) == 0

    assert await frontier.status_counts() == {"queued": 3}
    assert await frontier.host_count() == 2
    assert (await row(scheduler_db, "http://a.example/x"))["depth"] == 2
    assert (await host_row(scheduler_db, "b.example"))["partition"] == partition_for("b.example", PARTITIONS)


async def test_duplicates_in_one_call_keep_the_shallowest(frontier: FrontierStore, scheduler_db: Database) -> None:
    url = "http://a.example/p"
    assert await frontier.add_urls([new_url(url, 4), new_url(url, 1), new_url(url, 3)]) == 1
    assert (await row(scheduler_db, url))["depth"] == 1


async def test_add_urls_upgrades_a_known_row_and_keeps_its_priority(
    frontier: FrontierStore, scheduler_db: Database
) -> None:
    url = "http://a.example/known"
    await frontier.set_priorities([priority(url, 7.5)])
    known = await row(scheduler_db, url)
    assert (known["status"], known["priority"]) == ("known", 7.5)
    assert await frontier.dispatch(10, ALL) == []  # known, not discovered: never dispatched

    assert await frontier.add_urls([new_url(url, 2, "seed")]) == 1
    assert await frontier.add_urls([new_url(url, 2, "seed")]) == 0

    queued = await row(scheduler_db, url)
    assert (queued["status"], queued["priority"], queued["depth"], queued["source"]) == ("queued", 7.5, 2, "seed")
    assert [d.url for d in await frontier.dispatch(10, ALL)] == [url]


async def test_set_priorities_updates_without_changing_status(frontier: FrontierStore, scheduler_db: Database) -> None:
    url = "http://a.example/"
    await frontier.add_urls([new_url(url)])
    await frontier.set_priorities([priority(url, 1.0), priority(url, 3.0)])  # the latest wins
    await frontier.set_priorities([])

    queued = await row(scheduler_db, url)
    assert (queued["status"], queued["priority"]) == ("queued", 3.0)


# -- dispatch ---------------------------------------------------------------------------


async def test_dispatch_takes_the_best_url_of_each_free_host_best_first(frontier: FrontierStore) -> None:
    h1, h2, h3 = hosts_in_distinct_partitions(3)
    wanted = {
        f"http://{h1}/low": 1.0, f"http://{h1}/high": 5.0, f"http://{h1}/mid": 3.0,
        f"http://{h2}/only": 2.0,
        f"http://{h3}/top": 10.0,
    }
    await frontier.add_urls([new_url(u) for u in wanted])
    await frontier.set_priorities([priority(u, p) for u, p in wanted.items()])

    sent = await frontier.dispatch(10, ALL)

    assert [d.url for d in sent] == [f"http://{h3}/top", f"http://{h1}/high", f"http://{h2}/only"]
    assert [d.priority for d in sent] == [10.0, 5.0, 2.0]
    assert all(d.attempts == 1 and d.request_id for d in sent)
    assert len({d.request_id for d in sent}) == 3
    assert await frontier.in_flight() == 3
    # Every host has a request out: nothing more until an outcome comes back.
    assert await frontier.dispatch(10, ALL) == []


async def test_urls_with_no_cash_announced_go_shallowest_first_and_after_any_with_cash(
    frontier: FrontierStore,
) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    by_depth = {f"http://{host}/deep-{d}": d for d in (3, 1, 4, 2)}
    await frontier.add_urls([new_url(u, depth=d) for u, d in by_depth.items()])
    order = []
    for _ in by_depth:
        (sent,) = await frontier.dispatch(10, ALL)
        order.append(by_depth[sent.url])
        await frontier.apply_outcomes([outcome(sent, pb.FETCH_STATUS_OK)], 3, 60.0)
    assert order == [1, 2, 3, 4]  # breadth first until the importance service announces cash
    await frontier.add_urls([new_url(f"http://{host}/shallow", depth=0), new_url(f"http://{host}/rich", depth=5)])
    await frontier.set_priorities([priority(f"http://{host}/rich", 1e-6)])
    (sent,) = await frontier.dispatch(10, ALL)
    assert sent.url == f"http://{host}/rich"  # any announced cash outweighs the depth order


async def test_a_pages_new_links_with_no_cash_go_most_repeated_first(frontier: FrontierStore) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    times = {f"http://{host}/once": 1, f"http://{host}/menu-and-text": 2, f"http://{host}/three": 3}
    await frontier.add_urls([replace(new_url(u, depth=1), occurrences=n) for u, n in times.items()])
    order = []
    for _ in times:
        (sent,) = await frontier.dispatch(10, ALL)
        order.append(times[sent.url])
        await frontier.apply_outcomes([outcome(sent, pb.FETCH_STATUS_OK)], 3, 60.0)
    assert order == [3, 2, 1]  # as AOPIC will share the page's cash, before it is announced


async def test_dispatch_respects_room(frontier: FrontierStore) -> None:
    hosts = hosts_in_distinct_partitions(4)
    await frontier.add_urls([new_url(f"http://{h}/") for h in hosts])
    await frontier.set_priorities([priority(f"http://{h}/", float(i)) for i, h in enumerate(hosts)])

    assert await frontier.dispatch(0, ALL) == []
    first = await frontier.dispatch(1, ALL)
    assert [d.host for d in first] == [hosts[3]]
    second = await frontier.dispatch(2, ALL)
    assert [d.host for d in second] == [hosts[2], hosts[1]]
    assert [d.host for d in await frontier.dispatch(5, ALL)] == [hosts[0]]


async def test_dispatch_only_serves_the_owned_partitions(frontier: FrontierStore) -> None:
    h1, h2, h3 = hosts_in_distinct_partitions(3)
    await frontier.add_urls([new_url(f"http://{h}/") for h in (h1, h2, h3)])

    assert await frontier.dispatch(10, []) == []
    theirs = {partition_for(h, PARTITIONS) for h in (h1, h2, h3)}
    assert await frontier.dispatch(10, [p for p in ALL if p not in theirs]) == []
    mine = await frontier.dispatch(10, [partition_for(h2, PARTITIONS)])
    assert [d.host for d in mine] == [h2]
    rest = await frontier.dispatch(10, ALL)
    assert sorted(d.host for d in rest) == sorted([h1, h3])


async def test_dispatch_marks_the_host_in_flight(frontier: FrontierStore, scheduler_db: Database) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    await frontier.add_urls([new_url(f"http://{host}/{i}") for i in range(3)])

    assert len(await frontier.dispatch(10, ALL)) == 1
    assert (await host_row(scheduler_db, host))["in_flight"] == 1
    assert await frontier.dispatch(10, ALL) == []
    assert await frontier.status_counts() == {"queued": 2, "in_flight": 1}


# -- outcomes ---------------------------------------------------------------------------


async def test_fetched_frees_the_host_and_numbers_the_fetch(frontier: FrontierStore, scheduler_db: Database) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    await frontier.add_urls([new_url(f"http://{host}/a"), new_url(f"http://{host}/b")])

    (first,) = await frontier.dispatch(10, ALL)
    assert await frontier.apply_outcomes([outcome(first, pb.FETCH_STATUS_OK)], MAX_ATTEMPTS, RETRY_BASE) == 1
    done = await row(scheduler_db, first.url)
    assert (done["status"], done["request_id"], done["http_status"], done["last_outcome"]) == (
        "fetched", None, 200, "FETCH_STATUS_OK",
    )
    assert done["fetch_seq"] is not None and done["fetched_at"] is not None
    hosts = await host_row(scheduler_db, host)
    assert (hosts["in_flight"], hosts["fetched"], hosts["errors"]) == (0, 1, 0)

    (second,) = await frontier.dispatch(10, ALL)  # the host is free again
    assert second.url != first.url
    await frontier.apply_outcomes([outcome(second, pb.FETCH_STATUS_OK)], MAX_ATTEMPTS, RETRY_BASE)
    assert (await row(scheduler_db, second.url))["fetch_seq"] > done["fetch_seq"]
    assert await frontier.status_counts() == {"fetched": 2}


async def test_host_waits_until_the_next_allowed_time(frontier: FrontierStore) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    await frontier.add_urls([new_url(f"http://{host}/a"), new_url(f"http://{host}/b")])
    (sent,) = await frontier.dispatch(10, ALL)
    later = datetime.now(UTC) + timedelta(hours=1)

    await frontier.apply_outcomes(
        [outcome(sent, pb.FETCH_STATUS_OK, host_next_allowed_at=later)], MAX_ATTEMPTS, RETRY_BASE
    )

    assert await frontier.dispatch(10, ALL) == []
    assert await frontier.ready_count() == 1


async def test_stale_or_repeated_outcomes_are_ignored(frontier: FrontierStore, scheduler_db: Database) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    await frontier.add_urls([new_url(f"http://{host}/a"), new_url(f"http://{host}/b")])
    (sent,) = await frontier.dispatch(10, ALL)

    stale = outcome(sent, pb.FETCH_STATUS_OK, request_id="not-the-current-request")
    assert await frontier.apply_outcomes([stale], MAX_ATTEMPTS, RETRY_BASE) == 0
    assert (await row(scheduler_db, sent.url))["status"] == "in_flight"
    assert (await host_row(scheduler_db, host))["in_flight"] == 1

    ok = outcome(sent, pb.FETCH_STATUS_OK)
    assert await frontier.apply_outcomes([ok], MAX_ATTEMPTS, RETRY_BASE) == 1
    (following,) = await frontier.dispatch(10, ALL)
    assert await frontier.apply_outcomes([ok], MAX_ATTEMPTS, RETRY_BASE) == 0  # redelivered
    assert (await host_row(scheduler_db, host))["in_flight"] == 1  # still counts the following request
    assert (await row(scheduler_db, following.url))["status"] == "in_flight"


async def test_retryable_failure_backs_off_until_max_attempts(frontier: FrontierStore, scheduler_db: Database) -> None:
    (host,) = hosts_in_distinct_partitions(1)
    url = f"http://{host}/flaky"
    await frontier.add_urls([new_url(url)])

    for attempt in range(1, MAX_ATTEMPTS):
        (sent,) = await frontier.dispatch(10, ALL)
        assert sent.attempts == attempt
        failure = outcome(sent, pb.FETCH_STATUS_HTTP_ERROR, retryable=True)
        assert await frontier.apply_outcomes([failure], MAX_ATTEMPTS, RETRY_BASE) == 1

        again = await row(scheduler_db, url)
        assert (again["status"], again["request_id"], again["last_error"]) == ("queued", None, "unavailable")
        backoff = RETRY_BASE * 2 ** (attempt - 1)
        assert backoff - 5 < again["wait"] <= backoff
        assert await frontier.dispatch(10, ALL) == []  # not before the backoff
        await make_ready(scheduler_db)

    (last,) = await frontier.dispatch(10, ALL)
    assert last.attempts == MAX_ATTEMPTS
    failure = outcome(last, pb.FETCH_STATUS_NETWORK_ERROR, retryable=True)
    assert await frontier.apply_outcomes([failure], MAX_ATTEMPTS, RETRY_BASE) == 1

    given_up = await row(scheduler_db, url)
    assert (given_up["status"], given_up["attempts"], given_up["last_outcome"]) == (
        "failed", MAX_ATTEMPTS, "FETCH_STATUS_NETWORK_ERROR",
    )
    hosts = await host_row(scheduler_db, host)
    assert (hosts["in_flight"], hosts["errors"], hosts["fetched"]) == (0, MAX_ATTEMPTS, 0)
    await make_ready(scheduler_db)
    assert await frontier.dispatch(10, ALL) == []


async def test_final_failure_and_robots_disallowed(frontier: FrontierStore, scheduler_db: Database) -> None:
    h1, h2 = hosts_in_distinct_partitions(2)
    await frontier.add_urls([new_url(f"http://{h1}/gone"), new_url(f"http://{h2}/private")])
    sent = {d.host: d for d in await frontier.dispatch(10, ALL)}

    applied = await frontier.apply_outcomes(
        [
            outcome(sent[h1], pb.FETCH_STATUS_HTTP_ERROR, retryable=False),
            outcome(sent[h2], pb.FETCH_STATUS_ROBOTS_DISALLOWED),
        ],
        MAX_ATTEMPTS,
        RETRY_BASE,
    )

    assert applied == 2
    assert (await row(scheduler_db, f"http://{h1}/gone"))["status"] == "failed"
    assert (await row(scheduler_db, f"http://{h2}/private"))["status"] == "blocked"
    assert await frontier.status_counts() == {"failed": 1, "blocked": 1}
    assert (await host_row(scheduler_db, h2))["in_flight"] == 0


# -- leases and pause ---------------------------------------------------------------------


async def test_expired_leases_are_queued_again(frontier: FrontierStore, scheduler_db: Database) -> None:
    h1, h2 = hosts_in_distinct_partitions(2)
    await frontier.add_urls([new_url(f"http://{h1}/"), new_url(f"http://{h2}/")])
    sent = await frontier.dispatch(10, ALL)
    assert len(sent) == 2

    assert await frontier.expire_leases(3600.0) == 0  # recent requests keep their lease
    assert await frontier.expire_leases(0.0) == 2

    for d in sent:
        lost = await row(scheduler_db, d.url)
        assert (lost["status"], lost["request_id"]) == ("queued", None)
        assert lost["last_error"].startswith("lease expired")
        assert (await host_row(scheduler_db, d.host))["in_flight"] == 0
    assert await frontier.in_flight() == 0

    # The outcome of a lost request arriving late is ignored; the URL goes out again.
    assert await frontier.apply_outcomes([outcome(sent[0], pb.FETCH_STATUS_OK)], MAX_ATTEMPTS, RETRY_BASE) == 0
    again = await frontier.dispatch(10, ALL)
    assert sorted(d.url for d in again) == sorted(d.url for d in sent)
    assert all(d.attempts == 2 for d in again)
    assert {d.request_id for d in again}.isdisjoint({d.request_id for d in sent})



async def test_the_recent_in_flight_count_follows_rounds_and_outcomes_and_others_at_the_next_count(
    frontier: FrontierStore, scheduler_db: Database,
) -> None:
    hosts = hosts_in_distinct_partitions(4)
    await frontier.add_urls([new_url(f"http://{h}/") for h in hosts])
    assert await frontier.in_flight_recent(3600.0) == 0
    sent = await frontier.dispatch(10, ALL)
    assert len(sent) == 4 and await frontier.in_flight_recent(3600.0) == 4
    await frontier.apply_outcomes([outcome(sent[0], pb.FETCH_STATUS_OK)], MAX_ATTEMPTS, RETRY_BASE)
    assert await frontier.in_flight_recent(3600.0) == 3
    async with scheduler_db.transaction() as conn:  # another writer: seen at the next count
        await conn.execute("UPDATE scheduler.frontier SET status = 'queued' WHERE url_fp = %s", (sent[1].url_fp,))
    assert await frontier.in_flight_recent(3600.0) == 3
    assert await frontier.in_flight_recent(0.0) == 2
    assert await frontier.expire_leases(0.0) == 2
    assert await frontier.in_flight_recent(3600.0) == 0


async def test_no_index_of_every_url_by_status(scheduler_db: Database) -> None:
    async with scheduler_db.connection() as conn:
        cur = await conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'scheduler' AND tablename = 'frontier'")
        names = {r[0] for r in await cur.fetchall()}
    assert "frontier_status" not in names and {"frontier_ready", "frontier_in_flight", "frontier_revisits"} <= names


async def test_queued_urls_are_counted_by_the_first_directory_of_their_url(frontier: FrontierStore) -> None:
    """The count is taken in SQL: it must agree with the one definition of a URL's first directory."""
    urls = ["http://big.example/news/1.html", "http://big.example/news/", "http://big.example/news",
            "http://big.example/a/b/c?x=/y/", "http://big.example/?q=/z/", "http://big.example/x.html",
            "http://big.example:8080/news/2.html", "http://big.example//double/x", "http://u@big.example/u/1"]
    await frontier.add_urls([new_url(u) for u in urls])
    expected = Counter(first_directory(normalize_url(u)) for u in urls)
    assert expected["news"] == 3 and expected[""] == 4
    assert await frontier.queued_path_counts("big.example") == dict(expected)
