"""Seeds, drain and the reports of the admin API: a URL's report, top pages, host and topic statistics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cli.admin_client import AdminClient
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.topics import ALL_TOPICS, FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.localinfra import create_topics
from services.scheduler.admin.other_state import VersionRow, changes_per_day
from services.scheduler.admin.topics import topic_stats
from services.scheduler.frontier.store import FrontierStore, NewUrl, Outcome, Priority
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ALL_PARTITIONS = list(range(FETCH_REQUESTS.partitions))


@pytest.fixture
async def client(scheduler_db: Database, frontier: FrontierStore) -> AsyncIterator[AdminClient]:
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        with AdminClient(address, token=TOKEN) as admin:
            yield admin


def new(url: str, depth: int = 1) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), depth)


async def finish(frontier: FrontierStore, status: str = "fetched") -> None:
    """Ends every request in flight with ``status``."""
    for d in await frontier.dispatch(100, ALL_PARTITIONS):
        await frontier.apply_outcomes(
            [Outcome(d.url_fp, d.request_id, d.host, status, 200, "FETCH_STATUS_OK", "", datetime.now(UTC), None)],
            3, 10.0,
        )


async def test_seeds_are_listed_and_removed_but_not_while_in_flight(
    client: AdminClient, frontier: FrontierStore
) -> None:
    await asyncio.to_thread(client.add_seeds, ["http://a.example/", "http://b.example/", "http://b.example/2"])
    await frontier.add_urls([new("http://a.example/found")])
    listed = await asyncio.to_thread(client.list_seeds, 10, "b.example")
    assert listed["total"] == 2 and {s["url"] for s in listed["seeds"]} == {"http://b.example/", "http://b.example/2"}
    assert (await asyncio.to_thread(client.list_seeds))["total"] == 3

    sent = {d.host: d.url for d in await frontier.dispatch(10, ALL_PARTITIONS)}  # one URL of each host
    flying = sent["a.example"]
    (waiting,) = {"http://b.example/", "http://b.example/2"} - {sent["b.example"]}
    removed = await asyncio.to_thread(
        client.remove_seeds, [flying, waiting, "http://nowhere.example/", "javascript:x"]
    )
    assert removed["removed"] == 1 and removed["not_found"] == 1 and removed["in_flight"] == [flying]
    assert [r["reason"] for r in removed["rejected"]] == ["unsupported_scheme:javascript"]
    assert (await asyncio.to_thread(client.list_seeds))["total"] == 2


async def test_drain_pauses_and_waits_for_the_requests_in_flight(client: AdminClient, frontier: FrontierStore) -> None:
    await asyncio.to_thread(client.add_seeds, ["http://a.example/", "http://b.example/"])
    (first, second) = await frontier.dispatch(10, ALL_PARTITIONS)
    early = await asyncio.to_thread(client.drain, 0.0)
    assert early == {"paused": True, "in_flight": 2, "drained": False}

    async def answer_later() -> None:
        await asyncio.sleep(0.5)
        for d in (first, second):
            await frontier.apply_outcomes(
                [Outcome(d.url_fp, d.request_id, d.host, "fetched", 200, "ok", "", datetime.now(UTC), None)], 3, 10.0
            )

    answering = asyncio.create_task(answer_later())
    drained = await asyncio.to_thread(client.drain, 20.0)
    await answering
    assert drained == {"paused": True, "in_flight": 0, "drained": True}
    resumed = await asyncio.to_thread(client.set_paused, False)
    assert resumed == {"paused": False, "in_flight": 0, "drained": False}


async def test_host_stats_count_each_hosts_urls_and_order_them(client: AdminClient, frontier: FrontierStore) -> None:
    await frontier.add_urls([new(f"http://big.example/{i}") for i in range(5)] + [new("http://small.example/")])
    await finish(frontier)  # one page of each host fetched
    await frontier.add_urls([new("http://small.example/2")])
    top = await asyncio.to_thread(client.host_stats, None, 1, "queued")
    (big,) = top["hosts"]
    assert (big["host"], big["queued"], big["fetched"], big["in_flight"], big["slots"]) == ("big.example", 4, 1, 0, 1)
    named = await asyncio.to_thread(client.host_stats, ["small.example", "http://big.example/x"])
    assert [h["host"] for h in named["hosts"]] == ["big.example", "small.example"]
    with pytest.raises(Exception, match="order_by"):
        await asyncio.to_thread(client.host_stats, None, 5, "colour")


async def test_without_other_services_state_reports_use_the_frontiers_priority(
    client: AdminClient, frontier: FrontierStore
) -> None:
    await frontier.add_urls([new("http://a.example/"), new("http://a.example/b")])
    await frontier.set_priorities([Priority(url_fingerprint("http://a.example/b"), "http://a.example/b", "a.example",
                                            0.25)])
    report = await asyncio.to_thread(client.lookup_url, "HTTP://A.example:80/b#x")
    assert report["url"] == "http://a.example/b" and report["known"] and report["status"] == "queued"
    assert report["importance"] == {"cash": 0.25, "history": 0.0, "importance": 0.25, "visits": 0,
                                    "last_visit_ms": 0, "source": "frontier"}
    assert report["held_by"] == [] and report["predicted_changes_per_day"] is None and report["fetches"] == []
    top = await asyncio.to_thread(client.top_pages, 1)
    assert top["source"] == "frontier" and [p["url"] for p in top["pages"]] == ["http://a.example/b"]

    unknown = await asyncio.to_thread(client.lookup_url, "http://new.example/")
    assert unknown["known"] is False and unknown["importance"] is None
    with pytest.raises(Exception, match="not a crawlable URL"):
        await asyncio.to_thread(client.lookup_url, "mailto:someone@example.com")


async def test_a_url_report_reads_importance_history_and_versions(
    client: AdminClient, frontier: FrontierStore, scheduler_db: Database, fresh_db: str
) -> None:
    for service in ("importance", "linkbase"):
        apply_migrations(fresh_db, service, Path(f"services/{service}/migrations"))
    url, host = "http://news.example/", "news.example"
    fp = url_fingerprint(url)
    await frontier.add_urls([new(url, 0), new("http://news.example/old")])
    await finish(frontier)
    now = datetime.now(UTC)
    async with scheduler_db.transaction() as conn:
        await conn.execute(
            "INSERT INTO importance.pages (url_fp, url, host, cash, history, crawled, visits, last_visit)"
            " VALUES (%s, %s, %s, 0.1, 2.0, true, 3, %s), (1, 'http://news.example/old', %s, 0.5, 0.5, true, 1, %s)",
            (fp, url, host, now, host, now),
        )
        # what the importance service and the link base write to their own tables; the report reads their views
        host_id = 42
        await conn.execute(
            "INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, %s, %s)",
            (host_id, host, host),
        )
        for i, content in enumerate(["v1", "v1", "v2", "v3"]):
            at = now - timedelta(days=3 - i)
            await conn.execute(
                "INSERT INTO linkbase.fetch_history (host_id, url_fp, request_id, attempt, status, http_status,"
                " fetched_at, elapsed_ms, error) VALUES (%(hid)s, %(fp)s, %(rid)s, 1, 1, 200, %(at)s, 12, '')",
                {"fp": fp, "rid": f"r{i}", "at": at, "hid": host_id},
            )
            await conn.execute(
                "INSERT INTO linkbase.page_versions (host_id, url_fp, fetched_at, content_fp)"
                " VALUES (%(hid)s, %(fp)s, %(at)s, %(c)s)",
                {"fp": fp, "at": at, "c": content, "hid": host_id},
            )

    report = await asyncio.to_thread(client.lookup_url, url, 3)
    assert report["status"] == "fetched" and report["next_fetch_at_ms"] == 0
    assert report["importance"]["source"] == "importance"
    assert (report["importance"]["cash"], report["importance"]["history"], report["importance"]["visits"]) == (
        0.1, 2.0, 3)
    assert [f["request_id"] for f in report["fetches"]] == ["r3", "r2", "r1"]
    assert report["fetches"][0]["status"] == "FETCH_STATUS_OK" and report["fetches"][0]["elapsed_ms"] == 12
    assert [v["content_fingerprint"] for v in report["versions"]] == ["v3", "v2", "v1"]
    expected = changes_per_day([VersionRow(now - timedelta(days=3 - i), c, None)
                                for i, c in reversed(list(enumerate(["v1", "v1", "v2", "v3"])))])
    assert report["predicted_changes_per_day"] == pytest.approx(expected)

    top = await asyncio.to_thread(client.top_pages, 5)
    assert top["source"] == "importance"
    assert [(p["url"], p["status"]) for p in top["pages"]] == [(url, "fetched"), ("http://news.example/old", "")]
    assert top["pages"][0]["importance"] == pytest.approx(2.1)


def test_the_change_rate_estimate_grows_with_the_changes_seen() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)

    def rate(contents: str) -> float | None:
        return changes_per_day([VersionRow(start + timedelta(days=i), c, None) for i, c in enumerate(contents)][::-1])

    assert rate("a") is None
    assert rate("aaaa") == 0.0
    steady, some, every = rate("aaab"), rate("abbc"), rate("abcd")
    assert steady is not None and some is not None and every is not None
    assert 0 < steady < some < every
    assert every == pytest.approx(-__import__("math").log(0.5 / 3.5))  # three intervals of a day, all changed


async def test_topic_statistics_count_messages_and_each_groups_lag(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    prefix = unique_name("t") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in ALL_TOPICS])
    topic = prefix + FETCH_REQUESTS.name
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, key=b"a.example", value=f"m{i}".encode())
    producer.flush(10)
    group = unique_name("g")
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    partition = next(p for p in range(FETCH_REQUESTS.partitions)
                     if reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] > 0)
    reader.commit(offsets=[TopicPartition(topic, partition, 2)], asynchronous=False)
    reader.close()

    rows = {r.topic: r for r in await asyncio.to_thread(topic_stats, kafka_bootstrap, prefix)}
    assert set(rows) == {prefix + t.name for t in ALL_TOPICS}
    requests = rows[topic]
    assert (requests.partitions, requests.messages) == (FETCH_REQUESTS.partitions, 5)
    (lag,) = [g for g in requests.groups if g.group == group]
    assert (lag.lag, lag.partitions) == (3, 1)
    assert rows[prefix + "trawl.documents"].messages == 0


async def test_topic_statistics_through_the_api(
    scheduler_db: Database, frontier: FrontierStore, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    prefix = unique_name("t") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in ALL_TOPICS])
    async with serve_admin(scheduler_db, frontier, topic_stats=lambda: topic_stats(kafka_bootstrap, prefix)) as (
        address, _state,
    ):
        with AdminClient(address, token=TOKEN) as admin:
            reply = await asyncio.to_thread(admin.topic_stats)
    assert [t["topic"] for t in reply["topics"]] == [prefix + t.name for t in ALL_TOPICS]
    assert all(t["messages"] == 0 for t in reply["topics"])
