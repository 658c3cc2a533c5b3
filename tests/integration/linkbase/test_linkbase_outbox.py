"""The discovery outbox: pending URLs left by a crash are announced at the next start, once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import DISCOVERED_URLS, PAGE_LINKS
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.linkbase.batch import build_batch
from services.linkbase.outbox import DiscoveryPublisher
from services.linkbase.store import LinkStore
from services.linkbase.trap_signal import TrapPolicy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _read_all(bootstrap: str, topic: str, expected: int, timeout: float) -> list[pb.DiscoveredUrl]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(DISCOVERED_URLS.partitions)])
    seen: list[pb.DiscoveredUrl] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(seen) <= expected:
            for msg in consumer.consume(500, 0.2):
                if msg.error() is None:
                    seen.append(pb.DiscoveredUrl.FromString(msg.value() or b""))
    finally:
        consumer.close()
    return seen


def _discoveries_topic(bootstrap: str, prefix: str) -> tuple[KafkaSettings, str]:
    """Settings with their own topic prefix, and their discovered-URLs topic, created."""
    settings = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix + ".")
    topic = settings.topic(DISCOVERED_URLS.name)
    create_topics(bootstrap, [(topic, DISCOVERED_URLS.partitions)])
    return settings, topic


async def test_pending_discoveries_survive_a_crash_and_are_announced_once(
    linkbase_db: Database, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    settings, topic = _discoveries_topic(kafka_bootstrap, unique_name("outbox"))
    links = [pb.Link(url=f"http://a.test/{i}", link_class=pb.LINK_CLASS_INTERNAL) for i in range(25)]
    record: Record[Any] = Record(PAGE_LINKS, 0, 0, "", pb.PageLinks(url="http://a.test/", links=links), 0, None, None)
    # The batch commits, then the process "dies" before publishing: 25 URLs stay pending.
    await LinkStore(linkbase_db).write(build_batch([record]))

    producer = TopicProducer(settings, "linkbase-test")
    await producer.start()
    publisher = DiscoveryPublisher(linkbase_db, producer, interval=0.2, chunk=10, traps=TrapPolicy(10, 0.5, 0.9))
    await publisher.start()  # the next start publishes them, in chunks of 10
    try:
        deadline = time.monotonic() + 10
        while publisher.announced < 25 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await LinkStore(linkbase_db).write(build_batch([record]))  # a redelivery afterwards
        assert await publisher.publish_pending() == 0
    finally:
        await publisher.stop()
        await producer.stop()
    announced = await asyncio.to_thread(_read_all, kafka_bootstrap, topic, 25, 3.0)
    assert sorted(m.url for m in announced) == sorted(f"http://a.test/{i}" for i in range(25))
    assert all(m.discovered_from == "http://a.test/" and m.depth == 1 and m.host == "a.test" for m in announced)
    assert all(m.path_key == "a.test/" and m.path_penalty == 0.0 for m in announced)


async def test_a_discovery_says_how_many_times_its_page_links_it(
    linkbase_db: Database, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    settings, topic = _discoveries_topic(kafka_bootstrap, unique_name("occurrences"))
    links = [
        pb.Link(url="http://b.test/menu-and-text", link_class=pb.LINK_CLASS_INTERNAL, occurrences=2),
        pb.Link(url="http://b.test/once", link_class=pb.LINK_CLASS_INTERNAL),
        pb.Link(url="http://b.test/twice", link_class=pb.LINK_CLASS_INTERNAL),  # two hrefs, one URL
        pb.Link(url="http://B.test:80/twice", link_class=pb.LINK_CLASS_INTERNAL),
    ]
    record: Record[Any] = Record(PAGE_LINKS, 0, 0, "", pb.PageLinks(url="http://b.test/", links=links), 0, None, None)
    await LinkStore(linkbase_db).write(build_batch([record]))
    producer = TopicProducer(settings, "linkbase-test")
    await producer.start()
    try:
        publisher = DiscoveryPublisher(linkbase_db, producer, interval=60.0, chunk=100, traps=TrapPolicy(10, 0.5, 0.9))
        assert await publisher.publish_pending() == 3
    finally:
        await producer.stop()
    announced = await asyncio.to_thread(_read_all, kafka_bootstrap, topic, 3, 3.0)
    assert {m.url: m.occurrences for m in announced} == {
        "http://b.test/menu-and-text": 2, "http://b.test/once": 1, "http://b.test/twice": 2}
