"""The importance handler and its partitioned state on the real database and broker.

Batches of page links are handed to the handler directly (as the consumer would), so the
test decides offsets, redeliveries, restarts and rival owners; the cash transfers the
handler sends are read back from their topic and handed to it as the consumer would.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.followed_links import fill_followed
from libs.common.kafka.consumer import Record
from libs.common.kafka.partitioner import fingerprint_partition
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import CASH_TRANSFERS, IMPORTANCE_UPDATES, PAGE_LINKS, SEEDS
from libs.common.url_keys import UrlKind, key_text, normalized_fingerprint, url_kind
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.importance.cash_store import CONSERVATION_SQL, CashStore, Fenced
from services.importance.engine import OpicEngine
from services.importance.handler import ImportanceHandler
from services.importance.owned_partitions import DELIVERED_LOCALLY, OwnedPartitions
from services.importance.shard import REPLAYS
from tests.integration.importance.importance_web import (
    MIGRATIONS,
    PARTITIONS,
    SETTINGS,
    TOTAL,
    WEB,
    PageLinksFeed,
    TransferReader,
    audit,
    chunks,
    crawl_order,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@dataclass
class Env:
    db: Database
    producer: TopicProducer
    kafka: KafkaSettings
    transfers: TransferReader
    feed: PageLinksFeed
    make: Callable[[], tuple[OwnedPartitions, ImportanceHandler]]

    async def pump(self, handler: ImportanceHandler) -> int:
        """Hands every transfer sent so far to ``handler`` until none is left; returns how many."""
        total = 0
        while batch := await self.transfers.new(settle=0.6):
            await deliver(handler.cash_transfers, batch)
            total += len(batch)
        return total

    async def crawl(self, handler: ImportanceHandler, nodes: list[int], batch: int = 40) -> None:
        for part in chunks(nodes, batch):
            await deliver(handler.page_links, self.feed.records(part))
            await self.pump(handler)


async def deliver(handle: Callable[[list[Record[Any]]], Awaitable[None]], records: list[Record[Any]]) -> None:
    """Hands a batch of one topic over, retrying once when a copy was stale, as the consumer retries transient
    errors."""
    try:
        await handle(records)
    except Fenced:
        await handle(records)


@pytest.fixture
async def env(fresh_db: str, kafka_bootstrap: str, unique_name: Any) -> AsyncIterator[Env]:
    apply_migrations(fresh_db, "importance", MIGRATIONS)
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("imp") + ".")
    create_topics(kafka_bootstrap, [(kafka.topic(t.name), t.partitions) for t in (IMPORTANCE_UPDATES, CASH_TRANSFERS)])
    db = Database(DatabaseSettings(dsn=fresh_db), "importance-test")
    await db.start()
    producer = TopicProducer(kafka, "importance-test")
    await producer.start()
    reader = TransferReader(kafka_bootstrap, kafka.topic(CASH_TRANSFERS.name), unique_name("reader"))
    made: list[OwnedPartitions] = []

    def make() -> tuple[OwnedPartitions, ImportanceHandler]:
        owned = OwnedPartitions(CashStore(db, PARTITIONS, TOTAL), producer, SETTINGS.opic_config(PARTITIONS),
                                kafka.topic(CASH_TRANSFERS.name), kafka.topic(IMPORTANCE_UPDATES.name),
                                snapshot_idle=3600.0)
        made.append(owned)
        return owned, ImportanceHandler(owned)

    first, _ = make()
    await first.start()
    try:
        yield Env(db, producer, kafka, reader, PageLinksFeed(), make)
    finally:
        for owned in made:
            if owned._task is not None:
                owned._task.cancel()
        reader.close()
        await producer.stop()
        await db.stop()


def assert_conserved(total: float) -> None:
    assert math.isclose(total, TOTAL, rel_tol=1e-9), total


async def test_cash_is_conserved_across_partitions_restarts_and_redeliveries(env: Env) -> None:
    order = crawl_order()
    assert len(order) == len(WEB.urls)
    half = len(order) // 2
    _, handler = env.make()
    await env.crawl(handler, order[:half])
    first = await audit(env.db)
    assert_conserved(first.total)
    assert first.in_flight == pytest.approx(0.0, abs=1e-9)  # every transfer was applied
    assert first.visits == half

    # A restart: a new instance with nothing in memory loads the committed state and carries on;
    # a share of what it gets is redelivered (page links and transfers it already applied).
    _, restarted = env.make()
    await restarted.page_links(env.feed.sent[: half // 3])
    await restarted.cash_transfers(env.transfers.seen[: len(env.transfers.seen) // 2])
    await env.crawl(restarted, order[half:])
    await restarted.page_links(env.feed.sent[-20:])
    await restarted.cash_transfers(env.transfers.seen[-5:])
    final = await audit(env.db)
    assert_conserved(final.total)
    assert final.in_flight == pytest.approx(0.0, abs=1e-9)
    assert final.visits == len(order)  # each page applied once, redeliveries skipped
    assert final.pages <= len(WEB.urls) + len(WEB.urls) // 11  # nofollow and bad links added no page

    # Snapshots audit each partition's cash: the SQL view of conservation agrees.
    owned2, _ = env.make()
    for p in range(PARTITIONS):
        await owned2.snapshot(await owned2.get(p))
    async with env.db.connection() as conn:
        cur = await conn.execute(CONSERVATION_SQL)
        accounted, total = await cur.fetchone()  # type: ignore[misc]
    assert total == pytest.approx(TOTAL) and accounted == pytest.approx(TOTAL, rel=1e-9)
    async with env.db.connection() as conn:  # snapshots publish home and index pages for people to read
        cur = await conn.execute("SELECT url, cash, history FROM importance.pages")
        published = await cur.fetchall()
    homes = {WEB.urls[h] for h in WEB.home_pages}
    assert homes <= {url for url, _, _ in published}
    assert all(url_kind(url) != UrlKind.PAGE for url, _, _ in published)


async def test_a_stale_copy_cannot_commit_and_catches_up_on_retry(env: Env) -> None:
    order = crawl_order()
    _, a = env.make()
    _, b = env.make()
    await env.crawl(a, order[:60])
    await env.crawl(b, order[60:120])  # b loads the partitions a committed and commits over them
    records = env.feed.records(order[120:160])
    with pytest.raises(Fenced):
        await a.page_links(records)  # a's copies are stale: nothing of this batch is committed
    await a.page_links(records)  # the retry loads the committed state first
    await env.pump(b)
    result = await audit(env.db)
    assert_conserved(result.total)
    assert result.visits == 160


async def test_transfers_left_in_the_outbox_are_sent_again_and_applied_once(env: Env,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    order = crawl_order()
    owned, handler = env.make()

    async def elsewhere(_partition: int) -> None:
        return None  # as if every other partition had another owner: transfers go through the outbox

    monkeypatch.setattr(owned, "_held", elsewhere)
    await env.crawl(handler, order[:50])

    async def lost(*_args: object) -> None:
        raise ConnectionError("the broker went away after the commit")

    monkeypatch.setattr(owned, "_send", lost)
    with pytest.raises(ConnectionError):
        await handler.page_links(env.feed.records(order[50:90]))  # committed, transfers not sent
    monkeypatch.setattr(owned, "_send", OwnedPartitions._send.__get__(owned))
    async with env.db.connection() as conn:
        cur = await conn.execute("SELECT count(*), coalesce(sum(cash), 0) FROM importance.outbox")
        rows, cash = await cur.fetchone()  # type: ignore[misc]
    assert rows > 0 and cash > 0
    half_way = await audit(env.db)
    assert half_way.in_flight == pytest.approx(cash, rel=1e-9)  # the outbox is the cash in flight

    for _ in range(2):  # two instances load the partitions in turn: the outbox is sent twice
        again, _ = env.make()
        for p in range(PARTITIONS):
            await again.get(p)
    await env.pump(handler)
    await env.crawl(handler, order[90:120])
    result = await audit(env.db)
    assert_conserved(result.total)
    assert result.in_flight == pytest.approx(0.0, abs=1e-9)
    assert result.visits == 120


async def test_importance_updates_carry_each_touched_pages_cash_keyed_by_host(env: Env, unique_name: Any) -> None:
    order = crawl_order()
    _, handler = env.make()
    reader = Consumer({"bootstrap.servers": env.kafka.bootstrap, "group.id": unique_name("u"),
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(env.kafka.topic(IMPORTANCE_UPDATES.name), p, OFFSET_BEGINNING)
                   for p in range(IMPORTANCE_UPDATES.partitions)])
    try:
        await env.crawl(handler, order[:30])
        latest: dict[str, tuple[str, pb.ImportanceUpdate]] = {}
        while msgs := reader.consume(1000, 1.0):
            for m in msgs:
                if m.error() is None:
                    message = pb.ImportanceUpdates.FromString(m.value() or b"")
                    assert message.host == (m.key() or b"").decode()
                    for update in message.updates:
                        latest[update.url] = (message.host, update)
    finally:
        reader.close()
    crawled = {WEB.urls[n] for n in order[:30]}
    linked = {WEB.urls[t] for n in order[:30] for t in WEB.out_links[n]}
    assert set(latest) == crawled | linked
    store = CashStore(env.db, PARTITIONS, TOTAL)
    engines: dict[int, OpicEngine] = {}
    for url, (key, update) in latest.items():
        assert key == update.host == url.split("/")[2]
        p = fingerprint_partition(normalized_fingerprint(url), PARTITIONS)
        if p not in engines:
            loaded = await store.load(p, lambda: OpicEngine(SETTINGS.opic_config(PARTITIONS), TOTAL / PARTITIONS))
            engines[p] = loaded.engine
        engine = engines[p]
        s = engine.slot(normalized_fingerprint(url))
        assert s is not None
        assert update.history == pytest.approx(engine.history[s], rel=1e-12)
        if engine.crawled(s):
            assert update.cash == pytest.approx(engine.effective_cash(s), rel=1e-12, abs=1e-15)
        else:  # the virtual page's dividends keep growing after the last announcement
            assert update.cash <= engine.effective_cash(s) * (1 + 1e-12)


async def test_replays_are_committed_with_their_batch_and_their_links_survive_a_restart(env: Env) -> None:
    order = crawl_order()[:40]
    before = REPLAYS._value.get()
    _, handler = env.make()
    await env.crawl(handler, order)
    assert REPLAYS._value.get() > before  # the crawls earned replays, and crawled pages had cash to pass on
    store = CashStore(env.db, PARTITIONS, TOTAL)
    engines = {p: (await store.load(p, lambda: OpicEngine(SETTINGS.opic_config(PARTITIONS), TOTAL / PARTITIONS)))
               .engine for p in range(PARTITIONS)}
    for node in order:  # a restarted instance has each crawled page's URL and followed out-links to replay
        url = WEB.urls[node]
        engine = engines[fingerprint_partition(normalized_fingerprint(url), PARTITIONS)]
        s = engine.slot(normalized_fingerprint(url))
        assert s is not None and engine.url(s) == url
        kept = engine.kept_links(s)
        assert kept is not None
        keys, owners_kept = kept
        assert sorted(keys) == sorted({normalized_fingerprint(WEB.urls[t]) for t in WEB.out_links[node] if t != node})
        assert list(owners_kept) == [fingerprint_partition(k, PARTITIONS) for k in keys]
    result = await audit(env.db)
    assert_conserved(result.total)
    assert result.in_flight == pytest.approx(0.0, abs=1e-9)
    assert result.visits == len(order)  # replays are not counted as crawls


def _page_twice_linking(fetched_at_ms: int) -> pb.PageLinks:
    """A home page linking B twice (say in its menu and its text) and C once, both on other sites, B and C in
    one partition and the page in another."""
    msg = pb.PageLinks(url=OCC_PAGE, host="occ-a.example", fetched_at_ms=fetched_at_ms, links=[
        pb.Link(url=OCC_B, link_class=pb.LINK_CLASS_EXTERNAL, occurrences=2),
        pb.Link(url=OCC_C, link_class=pb.LINK_CLASS_EXTERNAL)])
    fill_followed(msg)
    return msg


def _same_partition_pair() -> tuple[str, str]:
    page = fingerprint_partition(normalized_fingerprint(OCC_PAGE), PARTITIONS)
    by_partition: dict[int, list[str]] = {}
    for i in range(200):
        url = f"http://occ-{i}.example/story.html"
        p = fingerprint_partition(normalized_fingerprint(url), PARTITIONS)
        if p != page:
            by_partition.setdefault(p, []).append(url)
            if len(by_partition[p]) == 2:
                return by_partition[p][0], by_partition[p][1]
    raise AssertionError("no two URLs in one partition")


OCC_PAGE = "http://occ-a.example/"
OCC_B, OCC_C = _same_partition_pair()


@pytest.mark.parametrize("occurrences", [1, 2])
async def test_a_url_the_page_links_twice_gets_two_shares_up_to_the_setting(env: Env, occurrences: int) -> None:
    owned, _ = env.make()
    handler = ImportanceHandler(owned, max_link_occurrences=occurrences)
    part = fingerprint_partition(normalized_fingerprint(OCC_PAGE), PARTITIONS)
    for offset, at in enumerate((1_700_000_000_000, 1_700_000_060_000)):  # the first crawl finds the page without
        msg = _page_twice_linking(at)  # cash; its partition's virtual page pays it before the second
        record = Record(PAGE_LINKS, part, offset, key_text(normalized_fingerprint(OCC_PAGE)), msg, at, None, None)
        await deliver(handler.page_links, [record])
        await env.pump(handler)
    target = fingerprint_partition(normalized_fingerprint(OCC_B), PARTITIONS)
    store = CashStore(env.db, PARTITIONS, TOTAL)
    engine = (await store.load(target, lambda: OpicEngine(SETTINGS.opic_config(PARTITIONS), TOTAL / PARTITIONS))).engine
    b, c = (engine.effective_cash(engine.slots[normalized_fingerprint(u)]) for u in (OCC_B, OCC_C))
    assert c > 1.0  # the page passed its cash on
    if occurrences == 1:
        assert b == pytest.approx(c, rel=1e-12)
    else:
        assert b == pytest.approx(2 * c, rel=1e-9)
    assert_conserved((await audit(env.db)).total)


def _updated_cash(kafka: KafkaSettings, group: str) -> dict[str, float]:
    """URL -> the cash last announced for it on the importance-updates topic."""
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "enable.auto.commit": False})
    reader.assign([TopicPartition(kafka.topic(IMPORTANCE_UPDATES.name), p, OFFSET_BEGINNING)
                   for p in range(IMPORTANCE_UPDATES.partitions)])
    cash: dict[str, float] = {}
    deadline, quiet = time.monotonic() + 20, 0
    try:
        while time.monotonic() < deadline and (not cash or quiet < 2):  # until the first ones, then a quiet read
            msgs = reader.consume(1000, 0.5)
            quiet = 0 if msgs else quiet + 1
            for m in msgs:
                if m.error() is None:
                    for update in pb.ImportanceUpdates.FromString(m.value() or b"").updates:
                        cash[update.url] = update.cash
    finally:
        reader.close()
    return cash


@pytest.mark.parametrize("owner_of_targets", ["this instance", "another instance"])
async def test_a_transfer_to_a_partition_owned_here_is_applied_and_announced_with_its_batch(
    env: Env, unique_name: Any, owner_of_targets: str
) -> None:
    owned, handler = env.make()
    part = fingerprint_partition(normalized_fingerprint(OCC_PAGE), PARTITIONS)
    if owner_of_targets == "another instance":
        owned.owned = lambda: {part}
    before = DELIVERED_LOCALLY._value.get()
    at = 1_700_000_000_000
    record = Record(PAGE_LINKS, part, 0, key_text(normalized_fingerprint(OCC_PAGE)), _page_twice_linking(at), at,
                    None, None)
    await deliver(handler.page_links, [record])
    sent = await env.transfers.new(settle=0.6)
    announced = _updated_cash(env.kafka, unique_name("u"))
    result = await audit(env.db)
    assert_conserved(result.total)
    if owner_of_targets == "this instance":  # B and C got their shares in this batch, and nothing travelled
        assert DELIVERED_LOCALLY._value.get() == before + 1
        assert sent == [] and result.in_flight == pytest.approx(0.0, abs=1e-12)
        assert announced.get(OCC_B, 0) > 0 and announced.get(OCC_C, 0) > 0, announced
    else:  # their owner gets the transfer from the topic; it is the cash in flight until then
        assert DELIVERED_LOCALLY._value.get() == before
        assert [r.value.source_partition for r in sent] == [part]
        assert result.in_flight == pytest.approx(math.fsum(sent[0].value.cash), rel=1e-9) and result.in_flight > 0
        assert OCC_B not in announced and OCC_C not in announced


def _same_partition_as(url: str) -> str:
    part = fingerprint_partition(normalized_fingerprint(url), PARTITIONS)
    return next(u for u in (f"http://seed-{i}.example/" for i in range(1000))
                if fingerprint_partition(normalized_fingerprint(u), PARTITIONS) == part)


@pytest.mark.parametrize("seeded", [True, False])
async def test_a_seed_is_paid_before_its_first_crawl_which_passes_that_cash_on(
    env: Env, unique_name: Any, seeded: bool
) -> None:
    """Two seeds of one partition: the other is crawled first and links nowhere; then the page linking B and C."""
    _owned, handler = env.make()
    other = _same_partition_as(OCC_PAGE)
    part = fingerprint_partition(normalized_fingerprint(OCC_PAGE), PARTITIONS)

    def key(url: str) -> str:
        return key_text(normalized_fingerprint(url))

    at = 1_700_000_000_000
    if seeded:
        seeds = [Record(SEEDS, part, i, key(u), pb.Seed(url=u, added_at_ms=at), at, None, None)
                 for i, u in enumerate((OCC_PAGE, other))]
        await deliver(handler.seeds, seeds)
        first = _updated_cash(env.kafka, unique_name("u"))
        share = TOTAL / PARTITIONS / 2  # the only pages their partition knows: its virtual page's cash, alike
        assert first == {OCC_PAGE: pytest.approx(share, rel=1e-12), other: pytest.approx(share, rel=1e-12)}
        await deliver(handler.seeds, seeds[:1])  # delivered again: applied once
    lone = pb.PageLinks(url=other, host=other.split("/")[2], fetched_at_ms=at)
    fill_followed(lone)
    await deliver(handler.page_links, [Record(PAGE_LINKS, part, 0, key(other), lone, at, None, None)])
    await deliver(handler.page_links, [Record(PAGE_LINKS, part, 1, key(OCC_PAGE), _page_twice_linking(at), at, None,
                                              None)])
    announced = _updated_cash(env.kafka, unique_name("u"))
    passed_on = announced.get(OCC_B, 0.0) + announced.get(OCC_C, 0.0)
    if seeded:  # its own cash and a share of what the other gave back to the virtual page, less the virtual share
        assert passed_on > (1 - SETTINGS.opic_config(PARTITIONS).virtual_share) * TOTAL / PARTITIONS / 2
    else:  # unknown until its crawl, while the first page crawled in the partition had taken the virtual page's cash
        assert passed_on == 0.0
    assert_conserved((await audit(env.db)).total)
