"""A broker that lost its data: pages whose links never reached the link base are queued again, lost
announcements are made again, and nothing happens while the fetch-request topic keeps its id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.ends import read_to_end
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import DISCOVERED_URLS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker
from services.linkbase.rows import host_id
from services.scheduler.recovery.broker_loss import BrokerLoss
from tests.conftest import broker_of_its_own

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

LOST_LINKS = "http://a.example/lost-links"  # fetched; its links never reached the link base
KEPT_LINKS = "http://a.example/kept-links"  # fetched; its links are stored
UNANNOUNCED = "http://b.example/new"  # announced by the link base, never admitted


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    with broker_of_its_own("trawl-broker-loss-") as own:
        yield own


async def _seed(db: Database) -> None:
    async with db.transaction() as conn:
        for url in (LOST_LINKS, KEPT_LINKS):
            await conn.execute(
                "INSERT INTO scheduler.frontier (url_fp, url, host, status, http_status, fetched_at, etag)"
                " VALUES (%s, %s, %s, 'fetched', 200, now() - interval '20 seconds', 'v1')",
                (url_fingerprint(url), url, url_host(url)))
        for url in (LOST_LINKS, KEPT_LINKS, UNANNOUNCED):
            host = url_host(url)
            await conn.execute("INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, %s, %s)"
                               " ON CONFLICT DO NOTHING", (host_id(host), host, host))
            await conn.execute(
                "INSERT INTO linkbase.urls (host_id, url_fp, url, announce_state, fetched, links_at)"
                " VALUES (%s, %s, %s, 2, %s, CASE WHEN %s THEN now() - interval '20 seconds' END)",
                (host_id(host), url_fingerprint(url), url, url != UNANNOUNCED, url == KEPT_LINKS))


async def test_a_new_topic_id_queues_lost_pages_again_and_announces_lost_urls(
        fresh_db: str, broker: LocalBroker) -> None:
    for service in ("scheduler", "linkbase"):
        apply_migrations(fresh_db, service, Path(f"services/{service}/migrations"))
    db = Database(DatabaseSettings(dsn=fresh_db), "broker-loss-test")
    await db.start()
    kafka = KafkaSettings(bootstrap=broker.bootstrap, topic_prefix="loss.")
    producer = TopicProducer(kafka, "broker-loss-test")
    await producer.start()  # creates the topics
    try:
        await _seed(db)  # the lost page's document reached the link base (fetched), its links did not
        loss = BrokerLoss(db, kafka, producer)
        assert await loss.check() == 0  # the first sighting of the topic
        assert await loss.check() == 0  # the same id: nothing lost

        broker.stop()
        broker.ensure_started()  # memory-only: it comes back empty
        await producer.stop()
        producer = TopicProducer(kafka, "broker-loss-test")
        await producer.start()  # the topics again, with new ids
        loss = BrokerLoss(db, kafka, producer)
        assert await loss.check() == 2

        async with db.connection() as conn:
            cur = await conn.execute("SELECT url, status, etag FROM scheduler.frontier ORDER BY url")
            rows = await cur.fetchall()
        assert rows == [(KEPT_LINKS, "fetched", "v1"), (LOST_LINKS, "queued", None)]
        announced: list[pb.DiscoveredUrl] = []
        topic = kafka.topic(DISCOVERED_URLS.name)
        read_to_end(broker.bootstrap, {(topic, p): 0 for p in range(DISCOVERED_URLS.partitions)}, timeout=10,
                    on_message=lambda m: announced.append(pb.DiscoveredUrl.FromString(m.value())),
                    purpose="test")
        assert [a.url for a in announced] == [UNANNOUNCED]
        assert await loss.check() == 0  # reconciled once
    finally:
        await producer.stop()
        await db.stop()
