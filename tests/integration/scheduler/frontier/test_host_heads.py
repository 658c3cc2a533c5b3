"""Host heads on the real database: each host row names its best queued URL, whoever changed the frontier."""

from __future__ import annotations

import random

import pytest

from libs.common.db.pool import Database
from libs.common.urls import url_fingerprint
from libs.common.wire import messages as pb
from services.scheduler.frontier.host_policies import HostPolicyStore
from services.scheduler.frontier.store import FrontierStore
from tests.integration.scheduler.frontier.test_frontier_store import (
    ALL,
    MAX_ATTEMPTS,
    PARTITIONS,
    RETRY_BASE,
    new_url,
    outcome,
    priority,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def heads(db: Database) -> dict[str, int | None]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT host, head_fp FROM scheduler.hosts")
        return {str(host): fp for host, fp in await cur.fetchall()}


async def expected_heads(db: Database) -> dict[str, int | None]:
    """The heads recomputed from the frontier: best queued URL of each host, or none."""
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT h.host, b.url_fp FROM scheduler.hosts h LEFT JOIN LATERAL ("
            " SELECT url_fp FROM scheduler.frontier f WHERE f.host = h.host AND f.status = 'queued'"
            " ORDER BY priority DESC, url_fp LIMIT 1) b ON true"
        )
        return {str(host): fp for host, fp in await cur.fetchall()}


async def test_a_new_or_reweighed_url_becomes_its_hosts_head(frontier: FrontierStore, scheduler_db: Database) -> None:
    urls = [f"http://a.example/{i}" for i in range(3)]
    await frontier.add_urls([new_url(u) for u in urls])
    await frontier.set_priorities([priority(urls[0], 0.5), priority(urls[1], 0.2)])
    await frontier.set_priorities([priority(urls[2], 0.9)])  # a queued URL re-weighed above the head
    (sent,) = await frontier.dispatch(10, ALL)
    assert sent.url == urls[2]
    assert await heads(scheduler_db) == await expected_heads(scheduler_db)
    assert (await heads(scheduler_db))["a.example"] == url_fingerprint(urls[0])


async def test_a_retry_waiting_for_its_backoff_does_not_hold_the_hosts_other_urls(
    frontier: FrontierStore, scheduler_db: Database
) -> None:
    await frontier.add_urls([new_url("http://b.example/best"), new_url("http://b.example/next")])
    await frontier.set_priorities([priority("http://b.example/best", 0.9), priority("http://b.example/next", 0.1)])
    (first,) = await frontier.dispatch(10, ALL)
    assert first.url == "http://b.example/best"
    await frontier.apply_outcomes([outcome(first, pb.FETCH_STATUS_NETWORK_ERROR, retryable=True)],
                                  MAX_ATTEMPTS, RETRY_BASE)
    (second,) = await frontier.dispatch(10, ALL)  # the head (the retry) is not due: the next URL is
    assert second.url == "http://b.example/next"
    assert (await heads(scheduler_db))["b.example"] == url_fingerprint("http://b.example/best")


async def test_deleted_urls_leave_no_head(frontier: FrontierStore, scheduler_db: Database) -> None:
    await frontier.add_urls([new_url("http://c.example/1"), new_url("http://d.example/1")])
    await HostPolicyStore(scheduler_db, PARTITIONS).remove_sites(["c.example"])
    (sent,) = await frontier.dispatch(10, ALL)
    assert sent.host == "d.example"
    assert await heads(scheduler_db) == {"c.example": None, "d.example": None}


async def test_outcomes_in_one_batch_free_each_host_once(frontier: FrontierStore, scheduler_db: Database) -> None:
    await frontier.add_urls([new_url(f"http://h{i}.example/") for i in range(4)])
    sent = await frontier.dispatch(10, ALL)
    assert len(sent) == 4
    answers = [outcome(s, pb.FETCH_STATUS_OK) for s in sent]
    stale = outcome(sent[0], pb.FETCH_STATUS_OK, request_id="not-the-request")
    applied = await frontier.apply_outcomes([*answers, answers[1], stale], MAX_ATTEMPTS, RETRY_BASE)
    assert applied == 4
    async with scheduler_db.connection() as conn:
        cur = await conn.execute("SELECT sum(in_flight), sum(fetched) FROM scheduler.hosts")
        assert await cur.fetchone() == (0, 4)
    assert await frontier.apply_outcomes(answers, MAX_ATTEMPTS, RETRY_BASE) == 0  # redelivered


async def test_heads_stay_exact_through_a_random_crawl(frontier: FrontierStore, scheduler_db: Database) -> None:
    rng = random.Random(5)
    urls = [f"http://r{rng.randrange(6)}.example/{i}" for i in range(120)]
    await frontier.add_urls([new_url(u) for u in urls[:60]])
    for step in range(12):
        await frontier.set_priorities([priority(u, rng.random()) for u in rng.sample(urls, 20)])
        await frontier.add_urls([new_url(u) for u in urls[60 + step * 5 : 65 + step * 5]])
        sent = await frontier.dispatch(4, ALL)
        assert await heads(scheduler_db) == await expected_heads(scheduler_db)
        statuses = [pb.FETCH_STATUS_OK, pb.FETCH_STATUS_HTTP_ERROR, pb.FETCH_STATUS_ROBOTS_DISALLOWED]
        await frontier.apply_outcomes(
            [outcome(s, rng.choice(statuses), retryable=True) for s in sent], MAX_ATTEMPTS, RETRY_BASE
        )
    await frontier.dispatch(1, ALL)  # a round refreshes every stale host of its partitions
    async with scheduler_db.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM scheduler.host_heads_stale")
        assert await cur.fetchone() == (0,)
    assert await heads(scheduler_db) == await expected_heads(scheduler_db)
