"""The importance handler and cash store on the real database and broker.

Batches of page links are handed to the handler directly (as the consumer would), so the
test decides offsets and redeliveries; importance updates are read back from the topic.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import IMPORTANCE_UPDATES, PAGE_LINKS
from libs.common.urls import url_key
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.importance.cash_store import CashStore
from services.importance.handler import ImportanceHandler
from services.importance.settings import ImportanceSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOTAL_CASH = 100.0
INTERNAL, EXTERNAL, BAD = pb.LINK_CLASS_INTERNAL, pb.LINK_CLASS_EXTERNAL, pb.LINK_CLASS_BAD

# A small closed web: once every page is crawled, nothing new is left to discover.
WEB: dict[str, list[tuple[str, pb.LinkClass.ValueType]]] = {
    "http://a.example/": [("http://a.example/1", INTERNAL), ("http://a.example/2", INTERNAL),
                          ("http://b.example/", EXTERNAL)],
    "http://a.example/1": [("http://a.example/", INTERNAL), ("http://a.example/2", INTERNAL)],
    "http://a.example/2": [],
    "http://b.example/": [("http://b.example/x", INTERNAL), ("http://a.example/", EXTERNAL)],
    "http://b.example/x": [("http://b.example/", INTERNAL)],
}


def page_links(url: str, fetched_at_ms: int = 1_700_000_000_000) -> pb.PageLinks:
    links = [pb.Link(url=target, link_class=cls) for target, cls in WEB[url]]
    if url == "http://a.example/":
        # Never followed: cash must not flow over them.
        links.append(pb.Link(url="javascript:void(0)", link_class=BAD, bad_reason="unsupported_scheme"))
        links.append(pb.Link(url="http://a.example/secret", link_class=INTERNAL, nofollow=True))
    host = url.split("/")[2]
    return pb.PageLinks(url=url, host=host, fetched_at_ms=fetched_at_ms, depth=0, links=links)


def record(url: str, partition: int, offset: int) -> Record[pb.PageLinks]:
    return Record(
        topic=PAGE_LINKS, partition=partition, offset=offset, key=url_key(url), value=page_links(url),
        timestamp_ms=1_700_000_000_000 + offset, raw_key=None, raw_value=None,
    )


BATCHES: list[list[Record[pb.PageLinks]]] = [
    [record("http://a.example/", 0, 0), record("http://b.example/", 3, 0)],
    [record("http://a.example/1", 0, 1), record("http://b.example/x", 3, 1)],
    [record("http://a.example/2", 0, 2)],  # the last uncrawled page: the web is now fully crawled
    [record("http://a.example/", 0, 3), record("http://b.example/", 3, 2), record("http://a.example/1", 0, 4)],
]


class UpdateReader:
    """Reads the importance updates topic from the beginning, without a consumer group."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        partitions = range(IMPORTANCE_UPDATES.partitions)
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self.seen: list[tuple[str, pb.ImportanceUpdate]] = []

    def _poll(self) -> None:
        for msg in self._consumer.consume(500, 0.2):
            if msg.error() is None:
                update = pb.ImportanceUpdate()
                update.ParseFromString(msg.value() or b"")
                self.seen.append(((msg.key() or b"").decode(), update))

    async def read(self, count: int, timeout: float = 20.0) -> list[tuple[str, pb.ImportanceUpdate]]:
        """Waits for ``count`` more updates than were read before and returns those."""
        start = len(self.seen)
        deadline = time.monotonic() + timeout
        while len(self.seen) < start + count and time.monotonic() < deadline:
            await asyncio.to_thread(self._poll)
        await asyncio.to_thread(self._poll)  # anything beyond what was expected shows up too
        return self.seen[start:]

    def close(self) -> None:
        self._consumer.close()


@dataclass
class Env:
    db: Database
    store: CashStore
    handler: ImportanceHandler
    producer: TopicProducer
    updates: UpdateReader


@pytest.fixture
async def env(fresh_db: str, kafka_bootstrap: str, unique_name: Any) -> AsyncIterator[Env]:
    apply_migrations(fresh_db, "importance", Path("services/importance/migrations"))
    prefix = unique_name("imp") + "."
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=prefix)
    create_topics(kafka_bootstrap, [(kafka.topic(IMPORTANCE_UPDATES.name), IMPORTANCE_UPDATES.partitions)])
    db = Database(DatabaseSettings(dsn=fresh_db), "importance-test")
    await db.start()
    store = CashStore(db, TOTAL_CASH)
    await store.start()
    producer = TopicProducer(kafka, "importance-test")
    await producer.start()
    reader = UpdateReader(kafka_bootstrap, kafka.topic(IMPORTANCE_UPDATES.name), unique_name("reader"))
    handler = ImportanceHandler(store, producer, ImportanceSettings(total_cash=TOTAL_CASH))
    try:
        yield Env(db, store, handler, producer, reader)
    finally:
        reader.close()
        await producer.stop()
        await db.stop()


async def apply(env: Env, batch: list[Record[pb.PageLinks]]) -> None:
    await env.handler(list(batch))
    await env.producer.flush()


async def dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    async with db.connection() as conn:
        tables = {}
        for name, order in (("pages", "url_fp"), ("totals", "id"), ("applied", "topic, partition")):
            cur = await conn.execute(f"SELECT * FROM importance.{name} ORDER BY {order}")
            tables[name] = await cur.fetchall()
        return tables


async def effective_cash_by_url(db: Database) -> dict[str, tuple[float, float, float]]:
    """url -> (effective cash, history, importance), computed in SQL from the stored state."""
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT p.url, p.cash - p.dividend_mark + CASE WHEN p.crawled THEN t.crawled_dividend ELSE t.dividend END,"
            " p.history, t.history_total + t.total_cash FROM importance.pages p, importance.totals t"
        )
        return {url: (cash, hist, (hist + cash) / denom) for url, cash, hist, denom in await cur.fetchall()}


async def totals_row(db: Database) -> dict[str, Any]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT * FROM importance.totals")
        row = await cur.fetchone()
        assert row is not None and cur.description is not None
        return {col.name: value for col, value in zip(cur.description, row, strict=True)}


def assert_conserved(accounted: float, total: float) -> None:
    assert total == TOTAL_CASH
    assert math.isclose(accounted, total, rel_tol=1e-9), (accounted, total)


async def test_cash_is_conserved_in_the_database_across_batches(env: Env) -> None:
    assert_conserved(*await env.store.conservation())  # all cash in the virtual page at the start

    for batch in BATCHES:
        await apply(env, batch)
        assert_conserved(*await env.store.conservation())

    totals = await totals_row(env.db)
    assert totals["uncrawled"] == 0 and totals["crawled"] == len(WEB)
    assert totals["crawled_dividend"] > 0  # once all was crawled, the virtual page gave to every page
    assert totals["virtual_cash"] == 0.0
    cash = await effective_cash_by_url(env.db)
    assert set(cash) == set(WEB)  # bad and nofollow links were never followed, so never discovered
    assert all(c >= -1e-12 for c, _, _ in cash.values())
    async with env.db.connection() as conn:
        cur = await conn.execute("SELECT url, visits FROM importance.pages")
        visits = dict(await cur.fetchall())
    assert visits == {
        "http://a.example/": 2, "http://a.example/1": 2, "http://a.example/2": 1,
        "http://b.example/": 2, "http://b.example/x": 1,
    }
    assert totals["history_total"] == pytest.approx(sum(h for _, h, _ in cash.values()))


async def test_redelivered_batch_changes_nothing(env: Env) -> None:
    for batch in BATCHES[:2]:
        await apply(env, batch)
    before = await dump(env.db)
    assert before["applied"] == [(PAGE_LINKS.name, 0, 2), (PAGE_LINKS.name, 3, 2)]

    await apply(env, BATCHES[1])  # the same records at the same offsets, as after a crash
    await apply(env, BATCHES[0] + BATCHES[1])

    assert await dump(env.db) == before
    assert_conserved(*await env.store.conservation())


async def test_partly_redelivered_batch_applies_only_the_new_records(env: Env) -> None:
    await apply(env, BATCHES[0])
    await apply(env, [*BATCHES[0], record("http://a.example/1", 0, 1)])

    async with env.db.connection() as conn:
        cur = await conn.execute("SELECT url, visits FROM importance.pages WHERE visits > 0 ORDER BY url")
        assert await cur.fetchall() == [("http://a.example/", 1), ("http://a.example/1", 1), ("http://b.example/", 1)]
    assert (await dump(env.db))["applied"] == [(PAGE_LINKS.name, 0, 2), (PAGE_LINKS.name, 3, 1)]
    assert_conserved(*await env.store.conservation())


async def test_importance_updates_carry_the_effective_cash(env: Env) -> None:
    for batch in BATCHES:
        touched = {r.value.url for r in batch} | {t for r in batch for t, _ in WEB[r.value.url]}
        await apply(env, batch)

        updates = await env.updates.read(len(touched))
        by_url = {u.url: (key, u) for key, u in updates}
        assert len(updates) == len(touched)
        assert set(by_url) == touched  # every page whose cash changed, and no other

        stored = await effective_cash_by_url(env.db)
        for url, (key, update) in by_url.items():
            cash, history, importance = stored[url]
            assert key == update.host == url.split("/")[2]  # keyed by host, for the scheduler
            assert update.cash == pytest.approx(cash, rel=1e-12, abs=1e-12)
            assert update.history == pytest.approx(history, rel=1e-12, abs=1e-12)
            assert update.importance == pytest.approx(importance, rel=1e-12, abs=1e-12)
            assert update.updated_at_ms > 0

    # Every page had been crawled before the last batch, so the virtual page's cash went to
    # all of them: no effective cash is zero, not even that of a page just visited.
    assert all(u.cash > 0 for _, u in updates)


async def test_first_batch_gives_the_virtual_cash_to_the_pages_it_discovered(env: Env) -> None:
    await apply(env, BATCHES[0])
    updates = {u.url: u for _, u in await env.updates.read(5)}

    # Nothing was known before: the two crawled pages had no cash to give, and at the end of
    # the batch the virtual page's 100 went to the three pages they discovered.
    for url in ("http://a.example/", "http://b.example/"):
        assert (updates[url].cash, updates[url].history, updates[url].importance) == (0.0, 0.0, 0.0)
    for url in ("http://a.example/1", "http://a.example/2", "http://b.example/x"):
        assert updates[url].cash == pytest.approx(TOTAL_CASH / 3)
        assert updates[url].importance == pytest.approx(1 / 3)
    assert_conserved(*await env.store.conservation())
