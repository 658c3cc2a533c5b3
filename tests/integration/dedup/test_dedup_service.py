"""The dedup service end to end on the real broker and database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from libs.common.service import Service
from libs.common.topics import DEAD_LETTERS, DOCUMENTS, DUPLICATE_VERDICTS, Topic
from libs.common.urls import url_key
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.dedup.main import build

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


class TopicReader:
    """Reads a whole topic from the beginning, without a consumer group."""

    def __init__(self, bootstrap: str, prefix: str, topic: Topic) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}reader",
                                   "enable.auto.commit": False})
        self._consumer.assign([TopicPartition(prefix + topic.name, p, OFFSET_BEGINNING)
                               for p in range(topic.partitions)])
        self._type = topic.message_type
        self.seen: list[tuple[str, Any]] = []

    def _poll(self) -> None:
        for msg in self._consumer.consume(500, 0.2):
            if msg.error() is None:
                value = self._type()
                value.ParseFromString(msg.value() or b"")
                self.seen.append(((msg.key() or b"").decode(), value))

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[tuple[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            await asyncio.to_thread(self._poll)
        return self.seen

    def close(self) -> None:
        self._consumer.close()


def _produce(bootstrap: str, topic: str, messages: list[tuple[str, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in messages:
        producer.produce(topic, key=key.encode(), value=value)
        assert producer.flush(10) == 0


def _doc(url: str, fingerprint: str, text: str = "") -> tuple[str, bytes]:
    text = text or f"the text whose fingerprint is {fingerprint}"
    doc = pb.Document(url=url, host="a.test", text=text, content_fingerprint=fingerprint)
    return fingerprint, doc.SerializeToString()


@pytest.fixture
async def dedup(
    kafka_bootstrap: str, fresh_db: str, unique_name: Callable[[str], str]
) -> AsyncIterator[tuple[Service, str]]:
    prefix = unique_name("dd") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in (DOCUMENTS, DUPLICATE_VERDICTS,
                                                                              DEAD_LETTERS)])
    service = await build({
        "TRAWL_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
        "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        "TRAWL_DATABASE_URL": fresh_db,
        "TRAWL_GRPC_ADDRESS": "127.0.0.1:0",
        "TRAWL_DEDUP_GROUP": unique_name("dedup"),
    })
    await service.start()
    try:
        yield service, prefix
    finally:
        await service.stop()


async def test_first_copy_is_unique_later_copies_duplicate_and_redelivery_is_stable(
    dedup: tuple[Service, str], kafka_bootstrap: str
) -> None:
    _service, prefix = dedup
    first, second, other = "http://a.test/1", "http://b.test/copy", "http://a.test/2"
    _produce(kafka_bootstrap, prefix + DOCUMENTS.name, [
        _doc(first, "fp-x"),
        _doc(second, "fp-x"),
        _doc(first, "fp-x"),  # redelivered first copy
        _doc(other, "", text="   "),  # nothing to compare
        _doc(other, "fp-y"),
    ])
    verdicts = TopicReader(kafka_bootstrap, prefix, DUPLICATE_VERDICTS)
    try:
        seen = await verdicts.wait_for(5)
    finally:
        verdicts.close()
    by_key: dict[str, list[pb.DuplicateVerdict]] = {}
    for key, verdict in seen:
        by_key.setdefault(key, []).append(verdict)
    assert [(v.duplicate, v.duplicate_of) for v in by_key[url_key(first)]] == [(False, ""), (False, "")]
    [copy] = by_key[url_key(second)]
    assert (copy.duplicate, copy.duplicate_of, copy.similarity, copy.content_fingerprint) == (
        True, first, 1.0, "fp-x")
    assert [(v.duplicate, v.similarity) for v in by_key[url_key(other)]] == [(False, 0.0), (False, 0.0)]
    assert copy.kind == pb.DUPLICATE_KIND_EXACT
    assert all(v.decided_at_ms > 0 for _k, v in seen)


async def test_poison_documents_are_dead_lettered_and_good_ones_still_judged(
    dedup: tuple[Service, str], kafka_bootstrap: str
) -> None:
    _service, prefix = dedup
    _produce(kafka_bootstrap, prefix + DOCUMENTS.name, [
        ("k", b"\xff\xff garbage, not a protobuf message"),
        ("k", pb.Document(url="", text="orphan", content_fingerprint="k").SerializeToString()),
        ("k", pb.Document(url="http://good.test/", text="fine", content_fingerprint="k").SerializeToString()),
    ])
    letters = TopicReader(kafka_bootstrap, prefix, DEAD_LETTERS)
    verdicts = TopicReader(kafka_bootstrap, prefix, DUPLICATE_VERDICTS)
    try:
        dead = await letters.wait_for(2)
        assert sorted(letter.source_offset for _k, letter in dead) == [0, 1]
        assert all(letter.service == "dedup" for _k, letter in dead)
        [(key, verdict)] = await verdicts.wait_for(1)
        assert (key, verdict.url, verdict.duplicate) == (url_key("http://good.test/"), "http://good.test/", False)
    finally:
        letters.close()
        verdicts.close()


async def test_a_near_copy_names_the_first_copy(dedup: tuple[Service, str], kafka_bootstrap: str) -> None:
    from libs.simweb.words import TextSpec, paragraphs

    _service, prefix = dedup
    article = "\n".join(paragraphs(TextSpec(seed=5, paragraphs=5)))
    verdicts = TopicReader(kafka_bootstrap, prefix, DUPLICATE_VERDICTS)
    try:
        _produce(kafka_bootstrap, prefix + DOCUMENTS.name, [_doc("http://a.test/story", "fp-1", article)])
        [(_key, original)] = await verdicts.wait_for(1)
        _produce(kafka_bootstrap, prefix + DOCUMENTS.name, [
            _doc("http://b.test/copy", "fp-2", article.replace(" the ", " a ", 1))])
        seen = await verdicts.wait_for(2)
    finally:
        verdicts.close()
    copy = seen[1][1]
    assert (original.duplicate, original.kind, original.simhash != 0) == (False, pb.DUPLICATE_KIND_UNSPECIFIED, True)
    assert (copy.duplicate, copy.duplicate_of, copy.kind) == (True, "http://a.test/story", pb.DUPLICATE_KIND_NEAR)
    assert 0.5 <= copy.similarity < 1.0
