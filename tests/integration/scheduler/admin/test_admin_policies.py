"""Host policies and the crawl goal set through the admin API, honoured by the dispatcher.

The API and a dispatcher share one database; fetch requests go to a real topic and are read back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from cli.admin_client import AdminClient
from libs.common.db.pool import Database
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.scheduler.admin.api import AdminState
from services.scheduler.dispatcher import Dispatcher
from services.scheduler.frontier.store import FrontierStore, NewUrl, Outcome
from services.scheduler.settings import SchedulerSettings
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ALL_PARTITIONS = set(range(FETCH_REQUESTS.partitions))


@dataclass
class Crawl:
    client: AdminClient
    state: AdminState
    frontier: FrontierStore
    kafka: KafkaSettings
    producer: TopicProducer

    def dispatcher(self, settings: SchedulerSettings | None = None) -> Dispatcher:
        return Dispatcher(self.frontier, self.producer, settings or SchedulerSettings(), lambda: ALL_PARTITIONS,
                          self.state.goal_sites, self.state.pause, policies=self.state.policies, goal=self.state.goal)

    async def call(self, method: Callable[..., dict[str, Any]], *args: object, **kwargs: object) -> dict[str, Any]:
        return await asyncio.to_thread(method, *args, **kwargs)

    def sent(self, count: int) -> list[tuple[str, pb.FetchRequest]]:
        """(key, request) of the first ``count`` fetch requests of the topic."""
        topic = self.kafka.topic(FETCH_REQUESTS.name)
        reader = Consumer({"bootstrap.servers": self.kafka.bootstrap, "group.id": f"{topic}-reader",
                           "enable.auto.commit": False})
        reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ALL_PARTITIONS])
        found: list[tuple[str, pb.FetchRequest]] = []
        deadline = time.monotonic() + 30
        try:
            while len(found) < count and time.monotonic() < deadline:
                message = reader.poll(0.2)
                if message is not None and not message.error():
                    found.append(((message.key() or b"").decode(), pb.FetchRequest.FromString(message.value() or b"")))
        finally:
            reader.close()
        return found


@pytest.fixture
async def crawl(
    scheduler_db: Database, frontier: FrontierStore, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> AsyncIterator[Crawl]:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".")
    create_topics(kafka.bootstrap, [(kafka.topic(FETCH_REQUESTS.name), FETCH_REQUESTS.partitions)])
    producer = TopicProducer(kafka, "scheduler-admin-test")
    await producer.start()
    try:
        async with serve_admin(scheduler_db, frontier) as (address, state):
            with AdminClient(address, token=TOKEN) as client:
                yield Crawl(client, state, frontier, kafka, producer)
    finally:
        await producer.stop()


def new(url: str) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1)


async def test_a_policy_is_set_field_by_field_listed_and_cleared(crawl: Crawl) -> None:
    client = crawl.client
    first = await crawl.call(client.set_host_policy, "A.example", min_delay_seconds=2.0, budget=50, note="asked to")
    assert first["host"] == "a.example"
    assert (first["min_delay_seconds"], first["budget"], first["note"]) == (2.0, 50, "asked to")
    assert first["max_concurrency"] is None and first["blocked_until_ms"] is None

    second = await crawl.call(client.set_host_policy, "a.example", max_concurrency=0, budget=-1)
    assert (second["min_delay_seconds"], second["max_concurrency"], second["budget"]) == (2.0, 0, None)

    replaced = await crawl.call(client.set_host_policy, "http://a.example/any/page", replace=True,
                                partition_groups=3)
    assert replaced["partition_groups"] == 3 and replaced["min_delay_seconds"] is None and replaced["note"] is None

    await crawl.call(client.set_host_policy, "b.example", blocked_until_ms=int(time.time() * 1000) + 60_000)
    listed = await crawl.call(client.host_policies)
    assert [p["host"] for p in listed["policies"]] == ["a.example", "b.example"]
    only = await crawl.call(client.host_policies, ["b.example"])
    assert len(only["policies"]) == 1

    assert (await crawl.call(client.clear_host_policies, ["a.example", "b.example", "c.example"]))["cleared"] == 2
    assert (await crawl.call(client.host_policies))["policies"] == []


async def test_blocks_budgets_and_concurrency_hold_hosts_until_lifted(crawl: Crawl) -> None:
    await crawl.frontier.add_urls([new(u) for u in (
        "http://blocked.example/", "http://spent.example/", "http://held.example/", "http://free.example/",
    )])
    await crawl.call(crawl.client.set_host_policy, "blocked.example",
                     blocked_until_ms=int((datetime.now(UTC) + timedelta(hours=1)).timestamp() * 1000))
    await crawl.call(crawl.client.set_host_policy, "spent.example", budget=0)
    await crawl.call(crawl.client.set_host_policy, "held.example", max_concurrency=0)
    dispatcher = crawl.dispatcher()

    assert await dispatcher.dispatch_once() == 1
    report = await crawl.call(crawl.client.lookup_url, "http://blocked.example/")
    assert any("blocked until" in reason for reason in report["held_by"])
    assert report["next_fetch_at_ms"] > time.time() * 1000 + 3_000_000
    spent = await crawl.call(crawl.client.lookup_url, "http://spent.example/")
    assert any("budget is spent (0 of 0" in reason for reason in spent["held_by"])

    await crawl.call(crawl.client.set_host_policy, "blocked.example", blocked_until_ms=0)
    await crawl.call(crawl.client.set_host_policy, "spent.example", budget=-1)
    await crawl.call(crawl.client.set_host_policy, "held.example", max_concurrency=1)
    assert await dispatcher.dispatch_once() == 3
    assert sorted(r.host for _k, r in crawl.sent(4)) == [
        "blocked.example", "free.example", "held.example", "spent.example"]


async def test_a_budget_counts_fetched_pages_and_requests_in_flight(crawl: Crawl) -> None:
    await crawl.frontier.add_urls([new(f"http://small.example/{i}") for i in range(3)])
    await crawl.call(crawl.client.set_host_policy, "small.example", budget=2)
    dispatcher = crawl.dispatcher()
    for sent in (1, 2):
        assert await dispatcher.dispatch_once() == 1
        _key, request = crawl.sent(sent)[-1]
        fp = url_fingerprint(request.url)
        await crawl.frontier.apply_outcomes(
            [Outcome(fp, request.request_id, "small.example", "fetched", 200, "ok", "", datetime.now(UTC), None)],
            3, 10.0,
        )
    assert await dispatcher.dispatch_once() == 0
    (policy,) = (await crawl.call(crawl.client.host_policies, ["small.example"]))["policies"]
    assert policy["fetched"] == 2


async def test_a_delay_goes_to_the_fetcher_and_spaces_the_hosts_requests(crawl: Crawl, scheduler_db: Database) -> None:
    await crawl.frontier.add_urls([new("http://slow.example/a"), new("http://slow.example/b")])
    await crawl.call(crawl.client.set_host_policy, "slow.example", min_delay_seconds=30.0)
    dispatcher = crawl.dispatcher()
    assert await dispatcher.dispatch_once() == 1
    ((key, request),) = crawl.sent(1)
    assert (key, request.min_delay_seconds) == ("slow.example", 30.0)
    async with scheduler_db.connection() as conn:
        row = await (await conn.execute(
            "SELECT extract(epoch FROM next_allowed_at - now()) FROM scheduler.hosts WHERE host = 'slow.example'"
        )).fetchone()
    assert row is not None and 25 < float(row[0]) <= 30
    await crawl.frontier.apply_outcomes(
        [Outcome(url_fingerprint(request.url), request.request_id, "slow.example", "fetched", 200, "ok", "",
                 datetime.now(UTC), datetime.now(UTC) + timedelta(seconds=1))], 3, 10.0,
    )
    assert await dispatcher.dispatch_once() == 0  # the fetcher's gap was 1 s, the policy's 30 s wins
    waiting = ({"http://slow.example/a", "http://slow.example/b"} - {request.url}).pop()
    report = await crawl.call(crawl.client.lookup_url, waiting)
    assert any("politeness gap" in reason for reason in report["held_by"])


async def test_a_partitioned_host_is_keyed_by_group_with_one_slot_each(crawl: Crawl, scheduler_db: Database) -> None:
    await crawl.frontier.add_urls([new(f"http://big.example/{section}/{i}")
                                   for section in ("news", "sport") for i in range(3)])
    dispatcher = crawl.dispatcher()
    await dispatcher.prepare()
    await crawl.call(crawl.client.set_host_policy, "big.example", partition_groups=2)
    assert await dispatcher.dispatch_once() == 1
    async with scheduler_db.connection() as conn:
        slots = await (await conn.execute("SELECT slots FROM scheduler.hosts WHERE host = 'big.example'")).fetchone()
    assert slots == (2,)
    ((key, _request),) = crawl.sent(1)
    assert key in ("big.example#0", "big.example#1")

    await crawl.call(crawl.client.clear_host_policies, ["big.example"])
    await dispatcher.dispatch_once()
    async with scheduler_db.connection() as conn:
        slots = await (await conn.execute("SELECT slots FROM scheduler.hosts WHERE host = 'big.example'")).fetchone()
    assert slots == (1,)


async def test_a_removed_site_waits_until_it_is_added_again(crawl: Crawl) -> None:
    added = await crawl.call(crawl.client.add_sites, ["gone.example", "https://kept.example/start"])
    assert added["hosts"] == ["gone.example", "kept.example"] and added["urls_accepted"] == 2
    await crawl.frontier.add_urls([new("http://gone.example/page")])
    removed = await crawl.call(crawl.client.remove_sites, ["gone.example"])
    assert removed == {"hosts": ["gone.example"], "urls_removed": 2}
    await crawl.frontier.add_urls([new("http://gone.example/found-later")])  # discoveries are still admitted

    dispatcher = crawl.dispatcher()
    assert await dispatcher.dispatch_once() == 1
    sites = {s["host"]: s for s in (await crawl.call(crawl.client.list_sites))["hosts"]}
    assert set(sites) == {"gone.example", "kept.example"}
    assert sites["gone.example"]["policy"]["removed"] and sites["gone.example"]["queued"] == 1

    await crawl.call(crawl.client.add_sites, ["gone.example"])
    assert await dispatcher.dispatch_once() == 1
    assert {r.host for _k, r in crawl.sent(2)} == {"kept.example", "gone.example"}
    assert (await crawl.frontier.status_counts()) == {"in_flight": 2, "queued": 1}  # its home page is back too


async def test_a_crawl_goal_set_here_replaces_the_settings_and_reset_restores_them(
    crawl: Crawl, scheduler_db: Database
) -> None:
    settings = load_settings(SchedulerSettings, {}, bandit_policy="r2", bandit_sites=("a.example",),
                             bandit_step=1, bandit_parallel=1)
    await crawl.frontier.add_urls([new(u) for u in ("http://a.example/", "http://b.example/", "http://c.example/")])
    async with serve_admin(scheduler_db, crawl.frontier, settings=settings) as (address, state):
        with AdminClient(address, token=TOKEN) as client:
            shown = await asyncio.to_thread(client.crawl_goal)
            assert shown["source"] == "settings" and shown["goal"]["policy"] == "r2"

            goal = await asyncio.to_thread(client.set_crawl_goal, "r1", "documents", ["b.example", "c.example"],
                                           budget=4, step=1, parallel=1)
            assert goal["source"] == "admin" and goal["goal"]["sites"] == ["b.example", "c.example"]
            assert [s["chosen"] for s in goal["sites"]] == [True, False]

            dispatcher = Dispatcher(crawl.frontier, crawl.producer, settings, lambda: ALL_PARTITIONS,
                                    state.goal_sites, state.pause, policies=state.policies, goal=state.goal)
            await dispatcher.prepare()
            assert await dispatcher.dispatch_once() == 2  # a (no longer a goal site) and b (r1 starts there)
            assert {r.host for _k, r in crawl.sent(2)} == {"a.example", "b.example"}

            with pytest.raises(grpc.RpcError, match="unknown site policy"):
                await asyncio.to_thread(client.set_crawl_goal, "r9", "documents", ["x.example"])

            stopped = await asyncio.to_thread(client.set_crawl_goal, "")
            assert stopped["source"] == "admin" and stopped["goal"]["policy"] == "" and stopped["sites"] == []
            reset = await asyncio.to_thread(client.set_crawl_goal, reset=True)
            assert reset["source"] == "settings" and reset["goal"]["sites"] == ["a.example"]
