"""The extractor service end to end on the real broker: fetch results in, documents and page links out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from libs.common.service import Service
from libs.common.topics import DEAD_LETTERS, DOCUMENTS, FETCH_RESULTS, PAGE_LINK_COUNTS, PAGE_LINKS, Topic
from libs.common.urls import url_key
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.extractor.main import build
from tests.corpus.loader import load_corpus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


class TopicReader:
    """Reads a whole topic from the beginning, without a consumer group."""

    def __init__(self, bootstrap: str, prefix: str, topic: Topic) -> None:
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"{prefix}reader", "enable.auto.commit": False}
        )
        self._consumer.assign(
            [TopicPartition(prefix + topic.name, p, OFFSET_BEGINNING) for p in range(topic.partitions)]
        )
        self._type = topic.message_type
        self.seen: list[tuple[str, Any]] = []

    def _poll(self) -> None:
        for msg in self._consumer.consume(500, 0.2):
            if msg.error() is None:
                value = self._type()
                value.ParseFromString(msg.value() or b"")
                self.seen.append(((msg.key() or b"").decode(), value))

    async def wait_for(self, count: int, timeout: float = 30.0) -> list[tuple[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            await asyncio.to_thread(self._poll)
        return self.seen

    def close(self) -> None:
        self._consumer.close()


async def _built(bootstrap: str, prefix: str, group: str, env: dict[str, str]) -> Service:
    """An extractor service (not started) on its own topics, with ``env`` on top of the test settings."""
    topics = (FETCH_RESULTS, DOCUMENTS, PAGE_LINKS, PAGE_LINK_COUNTS, DEAD_LETTERS)
    create_topics(bootstrap, [(prefix + t.name, t.partitions) for t in topics])
    return await build({
        "TRAWL_KAFKA_BOOTSTRAP": bootstrap,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
        "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        "TRAWL_GRPC_ADDRESS": "127.0.0.1:0",
        "TRAWL_EXTRACTOR_GROUP": group,
        **env,
    })


@pytest.fixture(params=[1, 2], ids=["in-process", "two-worker-processes"])
async def extractor(
    kafka_bootstrap: str, unique_name: Callable[[str], str], request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Service, str]]:
    prefix = unique_name("ex") + "."
    service = await _built(kafka_bootstrap, prefix, unique_name("extractor"), {
        "TRAWL_URL_SORT_QUERY": "true",
        "TRAWL_EXTRACTOR_LINK_CONTEXT_CHARS": "40",  # the workers take the settings too (see the asserts)
        "TRAWL_EXTRACTOR_PROCESSES": str(request.param),
    })
    await service.start()
    try:
        yield service, prefix
    finally:
        await service.stop()


def _produce(bootstrap: str, topic: str, results: list[pb.FetchResult]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for result in results:
        producer.produce(topic, key=result.host.encode(), value=result.SerializeToString())
    assert producer.flush(10) == 0


async def test_corpus_pages_become_documents_and_page_links(
    extractor: tuple[Service, str], kafka_bootstrap: str
) -> None:
    _service, prefix = extractor
    cases = load_corpus()
    results = [case.fetch_result() for case in cases]
    poison = pb.FetchResult(url="javascript:void(0)", host="x.test", status=pb.FETCH_STATUS_OK, body=b"<p>x</p>")
    not_html = pb.FetchResult(
        url="http://a.test/photo.jpg", host="a.test", status=pb.FETCH_STATUS_OK, content_type="image/jpeg"
    )
    _produce(kafka_bootstrap, prefix + FETCH_RESULTS.name, [*results, poison, not_html])

    documents = TopicReader(kafka_bootstrap, prefix, DOCUMENTS)
    page_links = TopicReader(kafka_bootstrap, prefix, PAGE_LINKS)
    link_counts = TopicReader(kafka_bootstrap, prefix, PAGE_LINK_COUNTS)
    dead = TopicReader(kafka_bootstrap, prefix, DEAD_LETTERS)
    try:
        docs = await documents.wait_for(len(cases))
        links = await page_links.wait_for(len(cases))
        counts = await link_counts.wait_for(len(cases))
        letters = await dead.wait_for(1)
    finally:
        for reader in (documents, page_links, link_counts, dead):
            reader.close()

    assert len(docs) == len(links) == len(cases)
    by_url = {msg.url: (key, msg) for key, msg in links}
    assert all(key == url_key(url) for url, (key, _msg) in by_url.items())
    assert all(key == (doc.content_fingerprint or url_key(doc.url)) for key, doc in docs)
    [(_key, letter)] = letters
    assert "invalid URL" in letter.error

    # one count per page, keyed by the page's host, of its links by class
    assert len(counts) == len(cases)
    for key, count in counts:
        page = by_url[count.url][1]
        assert key == page.host
        classes = [link.link_class for link in page.links]
        assert (count.internal_links, count.external_links, count.bad_links) == (
            classes.count(pb.LINK_CLASS_INTERNAL), classes.count(pb.LINK_CLASS_EXTERNAL),
            classes.count(pb.LINK_CLASS_BAD))
    assert any(count.external_links for _key, count in counts) and any(count.internal_links for _key, count in counts)

    _key, category = by_url["https://www.rheintaler-bote.example.de/lokales/?seite=2"]
    traps = {link.url: link.trap_rule for link in category.links if link.trap_rule}
    assert set(traps.values()) == {"calendar", "session_id", "repeated_segments"}
    facets = [link.url for link in category.links if "ort=" in link.url]
    assert "https://www.rheintaler-bote.example.de/lokales/?ort=mainz&sort=datum" in facets  # sorted by name
    _key, article = by_url["https://www.coastalherald.example.co.uk/news/2025/06/harbour-wall-repairs"]
    fund = next(link for link in article.links if "coastal-resilience-fund" in link.url)
    assert fund.context.startswith("Funding comes from a national coastal resilience fund")
    assert len(fund.context) < len("Funding comes from a national coastal resilience fund") + 45


async def test_links_go_out_ahead_of_the_text_once_each_around_a_poison_record(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """Every page its own phase: the links of the pages before the poison record are sent before the batch is
    handed over again one record at a time, and then not again; every good page's document and links come
    out exactly once, and the poison record is dead-lettered."""
    prefix = unique_name("exl") + "."
    service = await _built(kafka_bootstrap, prefix, unique_name("extractor"), {"TRAWL_EXTRACTOR_PHASE_BYTES": "1"})
    html = "<html><body><p>Page {n} of the test.</p><a href='/next-{n}'>next</a></body></html>"
    pages = [
        pb.FetchResult(url=f"http://one.test/p{n}", host="one.test", status=pb.FETCH_STATUS_OK,
                       content_type="text/html", body=html.format(n=n).encode(), fetched_at_ms=1_000 + n)
        for n in range(6)
    ]
    poison = pb.FetchResult(url="javascript:void(0)", host="one.test", status=pb.FETCH_STATUS_OK, body=b"<p>x</p>")
    _produce(kafka_bootstrap, prefix + FETCH_RESULTS.name, [*pages[:4], poison, *pages[4:]])  # one key: one batch
    await service.start()
    readers = {t.name: TopicReader(kafka_bootstrap, prefix, t) for t in (DOCUMENTS, PAGE_LINKS, PAGE_LINK_COUNTS)}
    dead = TopicReader(kafka_bootstrap, prefix, DEAD_LETTERS)
    try:
        assert len(await dead.wait_for(1)) == 1
        for reader in readers.values():
            await reader.wait_for(len(pages))
        await asyncio.sleep(2.0)  # anything sent twice would have come by now
        for reader in readers.values():
            await reader.wait_for(len(pages) + 1, timeout=1.0)
    finally:
        await service.stop()
        for reader in (*readers.values(), dead):
            reader.close()
    want = sorted(page.url for page in pages)
    assert sorted(msg.url for _key, msg in readers[DOCUMENTS.name].seen) == want
    assert sorted(msg.url for _key, msg in readers[PAGE_LINKS.name].seen) == want
    assert sorted(msg.url for _key, msg in readers[PAGE_LINK_COUNTS.name].seen) == want
    assert all(len(msg.links) == 1 for _key, msg in readers[PAGE_LINKS.name].seen)
