"""Seeds added through the admin API are announced to the importance service on ``trawl.seeds``
(real broker, database and gRPC)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest
from prometheus_client import REGISTRY

from cli.admin_client import AdminClient
from libs.common.db.pool import Database
from libs.common.kafka.partitioner import fingerprint_partitions
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import SEEDS
from libs.common.url_keys import key_text, normalized_fingerprint
from libs.common.urls import normalize_url
from libs.common.wire import messages as pb
from services.scheduler.admin.seed_announcer import SeedAnnouncer
from services.scheduler.frontier.store import FrontierStore
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin
from tests.topic_reading import first_messages

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture
def kafka(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> KafkaSettings:
    return KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".")


@pytest.fixture
async def producer(kafka: KafkaSettings) -> AsyncIterator[TopicProducer]:
    sender = TopicProducer(kafka, "scheduler-seeds-test")
    await sender.start()  # creates the declared topics
    try:
        yield sender
    finally:
        await sender.stop()


def read_seeds(bootstrap: str, topic: str, count: int) -> list[tuple[int, str, pb.Seed]]:
    """(partition, key, message) of the first ``count`` messages on ``topic``."""
    return [(m.partition() or 0, (m.key() or b"").decode(), pb.Seed.FromString(m.value() or b""))
            for m in first_messages(bootstrap, topic, SEEDS.partitions, count)]


async def test_added_seeds_and_sites_reach_the_importance_partition_that_will_own_their_pages(
    scheduler_db: Database, frontier: FrontierStore, producer: TopicProducer, kafka: KafkaSettings,
) -> None:
    seeds = ["HTTP://Example.com:80/a/../b", "http://other.example/", "not a url"]
    wakes: list[float] = []
    async with serve_admin(scheduler_db, frontier, lambda: wakes.append(time.monotonic()),
                           seeds=SeedAnnouncer(producer)) as (address, _state):
        with AdminClient(address, token=TOKEN) as client:
            reply = await asyncio.to_thread(client.add_seeds, seeds)
            sites = await asyncio.to_thread(client.add_sites, ["third.example"])
    assert reply["accepted"] == 2 and len(reply["rejected"]) == 1 and sites["urls_accepted"] == 1

    found = read_seeds(kafka.bootstrap, kafka.topic(SEEDS.name), 3)
    urls = [normalize_url("http://example.com/b"), "http://other.example/", "http://third.example/"]
    assert sorted(m.url for _p, _k, m in found) == sorted(urls)
    for partition, key, message in found:
        fp = normalized_fingerprint(message.url)
        assert key == key_text(fp)  # keyed like the page's page links
        assert partition == fingerprint_partitions([fp], SEEDS.partitions)[0]
        assert message.added_at_ms > 0
    assert len(wakes) == 2


def failed() -> float:
    return REGISTRY.get_sample_value("trawl_scheduler_seed_announcements_failed_total") or 0.0


async def test_seeds_are_queued_when_the_broker_does_not_take_their_announcement(
    scheduler_db: Database, frontier: FrontierStore,
) -> None:
    unreachable = KafkaSettings(bootstrap="127.0.0.1:9", ensure_topics=False)
    producer = TopicProducer(unreachable, "scheduler-seeds-test")
    await producer.start()
    before = failed()
    announcer = SeedAnnouncer(producer, timeout=1.0)
    try:
        async with serve_admin(scheduler_db, frontier, seeds=announcer) as (address, _s):
            with AdminClient(address, token=TOKEN) as client:
                reply = await asyncio.to_thread(client.add_seeds, ["http://lonely.example/"])
    finally:
        await announcer.stop()
        producer._producer = None  # dropped unflushed: no broker ever listened there
    assert reply["accepted"] == 1
    assert failed() - before == 1
    assert await frontier.status_counts() == {"queued": 1}


async def test_seeds_acknowledged_after_the_calls_wait_do_not_leave_the_producer_stalled(
    kafka_bootstrap: str, unique_name: Callable[[str], str],
) -> None:
    settings = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".", stall_seconds=1.0)
    producer = TopicProducer(settings, "scheduler-seeds-test")
    await producer.start()
    announcer = SeedAnnouncer(producer, timeout=0.0001)  # gives up before any broker could answer
    before = failed()
    try:
        assert not await announcer.announce(["http://slow.example/"])
        assert failed() - before == 1
        await asyncio.sleep(2.5)  # past the stall limit: acknowledged by then, in the background
        assert await producer.stalled() is None
        assert [m.url for _p, _k, m in read_seeds(kafka_bootstrap, settings.topic(SEEDS.name), 1)] == [
            "http://slow.example/"]
    finally:
        await announcer.stop()
        await producer.stop()
