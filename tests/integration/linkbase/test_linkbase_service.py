"""The linkbase service end to end on the real broker and database: topics in, discoveries out, gRPC."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import psycopg
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from libs.common.grpc_auth import BearerTokenCallInterceptor
from libs.common.service import Service
from libs.common.topics import (
    DEAD_LETTERS,
    DISCOVERED_URLS,
    DOCUMENTS,
    DUPLICATE_VERDICTS,
    FETCH_OUTCOMES,
    PAGE_LINKS,
    Topic,
)
from libs.common.urls import url_key
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import linkbase_grpc
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.linkbase.main import build

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOPICS = (PAGE_LINKS, DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, DISCOVERED_URLS, DEAD_LETTERS)
TOKEN = "test-linkbase-token"


def authorized_channel(service: Service) -> grpc.aio.Channel:
    """A channel to the service's API whose calls carry the admin token."""
    return grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}",
                                     interceptors=[BearerTokenCallInterceptor(TOKEN)])


class TopicReader:
    """Reads a whole topic from the beginning, without a consumer group."""

    def __init__(self, bootstrap: str, prefix: str, topic: Topic) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}reader",
                                   "enable.auto.commit": False})
        self._consumer.assign([TopicPartition(prefix + topic.name, p, OFFSET_BEGINNING)
                               for p in range(topic.partitions)])
        self._type = topic.message_type
        self.seen: list[tuple[str, Any]] = []

    def _poll(self, timeout: float) -> None:
        for msg in self._consumer.consume(500, timeout):
            if msg.error() is None:
                value = self._type()
                value.ParseFromString(msg.value() or b"")
                self.seen.append(((msg.key() or b"").decode(), value))

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[tuple[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            await asyncio.to_thread(self._poll, 0.2)
        return self.seen

    async def settle(self, seconds: float) -> list[tuple[str, Any]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await asyncio.to_thread(self._poll, 0.2)
        return self.seen

    def close(self) -> None:
        self._consumer.close()


def _produce(bootstrap: str, topic: str, key: str, value: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key.encode(), value=value)
    assert producer.flush(10) == 0


async def _eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await check()
        except (AssertionError, grpc.aio.AioRpcError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


@pytest.fixture
async def linkbase(
    kafka_bootstrap: str, fresh_db: str, unique_name: Callable[[str], str]
) -> AsyncIterator[tuple[Service, str]]:
    prefix = unique_name("lb") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in TOPICS])
    service = await build({
        "TRAWL_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
        "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        "TRAWL_DATABASE_URL": fresh_db,
        "TRAWL_GRPC_ADDRESS": "127.0.0.1:0",
        "TRAWL_LINKBASE_GROUP": unique_name("linkbase"),
        "TRAWL_LINKBASE_PUBLISH_INTERVAL_SECONDS": "0.5",
        "TRAWL_ADMIN_TOKEN": TOKEN,
    })
    await service.start()
    try:
        yield service, prefix
    finally:
        await service.stop()


def _page_links(url: str, depth: int, *links: pb.Link) -> bytes:
    return pb.PageLinks(url=url, host="a.test", depth=depth, fetched_at_ms=1_700_000_000_000,
                        links=list(links)).SerializeToString()


HOME = _page_links(
    "http://a.test/", 0,
    pb.Link(url="http://a.test/x", anchor="X", link_class=pb.LINK_CLASS_INTERNAL),
    pb.Link(url="http://a.test/y", anchor="Y", link_class=pb.LINK_CLASS_INTERNAL),
    pb.Link(url="http://b.test/", anchor="B", link_class=pb.LINK_CLASS_EXTERNAL),
    pb.Link(url="http://a.test/z", anchor="Z", link_class=pb.LINK_CLASS_INTERNAL, nofollow=True),
    pb.Link(url="javascript:void(0)", link_class=pb.LINK_CLASS_BAD, bad_reason="unsupported_scheme:javascript"),
    pb.Link(url="http://[broken/", link_class=pb.LINK_CLASS_INTERNAL),
)


async def test_page_links_twice_announce_each_url_once_and_serve_the_graph(
    linkbase: tuple[Service, str], kafka_bootstrap: str, fresh_db: str
) -> None:
    service, prefix = linkbase
    consumer: Any = service.components[-1]
    discovered = TopicReader(kafka_bootstrap, prefix, DISCOVERED_URLS)
    page_links = prefix + PAGE_LINKS.name
    try:
        _produce(kafka_bootstrap, page_links, url_key("http://a.test/"), HOME)
        first = await discovered.wait_for(3)
        assert sorted(m.url for _k, m in first) == ["http://a.test/x", "http://a.test/y", "http://b.test/"]
        assert {k for k, _m in first} == {"a.test", "b.test"}
        assert all(m.depth == 1 and m.discovered_from == "http://a.test/" for _k, m in first)
        assert all(m.source == pb.DISCOVERY_SOURCE_LINK for _k, m in first)

        # The same page links again (a redelivery), then a page linking back.
        _produce(kafka_bootstrap, page_links, url_key("http://a.test/"), HOME)
        _produce(kafka_bootstrap, page_links, url_key("http://a.test/y"), _page_links(
            "http://a.test/y", 1,
            pb.Link(url="http://a.test/x", anchor="X from Y", link_class=pb.LINK_CLASS_INTERNAL),
            pb.Link(url="http://a.test/", anchor="home", link_class=pb.LINK_CLASS_INTERNAL),
        ))
        _produce(kafka_bootstrap, prefix + DOCUMENTS.name, "c1", pb.Document(
            url="http://a.test/", title="Home", content_fingerprint="c1").SerializeToString())
        _produce(kafka_bootstrap, prefix + FETCH_OUTCOMES.name, "down.test", pb.FetchOutcome(
            request_id="r1", url="http://down.test/", status=pb.FETCH_STATUS_NETWORK_ERROR,
            fetched_at_ms=1_700_000_000_000).SerializeToString())
        deadline = time.monotonic() + 15
        while consumer.processed < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert consumer.processed == 5
        assert len(await discovered.settle(1.5)) == 3
    finally:
        discovered.close()

    async with authorized_channel(service) as channel:
        stub = linkbase_grpc.LinkbaseServiceStub(channel)
        out: list[lb_pb.GraphLink] = []
        token = ""
        for _ in range(10):
            page = await stub.GetOutLinks(lb_pb.GetLinksRequest(url="http://a.test/", page_size=2, page_token=token))
            assert len(page.links) <= 2
            out.extend(page.links)
            token = page.next_page_token
            if not token:
                break
        good = {link.target_url: link for link in out if link.link_class != pb.LINK_CLASS_BAD}
        assert set(good) == {"http://a.test/x", "http://a.test/y", "http://b.test/", "http://a.test/z"}
        assert good["http://a.test/z"].nofollow and good["http://b.test/"].link_class == pb.LINK_CLASS_EXTERNAL
        bad = {link.target_url: link.bad_reason for link in out if link.link_class == pb.LINK_CLASS_BAD}
        assert bad == {"javascript:void(0)": "unsupported_scheme:javascript", "http://[broken/": "malformed"}

        inbound = await stub.GetInLinks(lb_pb.GetLinksRequest(url="http://a.test/x"))
        assert {(link.source_url, link.anchor) for link in inbound.links} == {
            ("http://a.test/", "X"), ("http://a.test/y", "X from Y")}
        assert inbound.next_page_token == ""
        one = await stub.GetInLinks(lb_pb.GetLinksRequest(url="http://a.test/x", page_size=1))
        rest = await stub.GetInLinks(lb_pb.GetLinksRequest(url="http://a.test/x", page_size=1,
                                                           page_token=one.next_page_token))
        assert len(one.links) == len(rest.links) == 1 and one.links[0].source_url != rest.links[0].source_url

        record = await _eventually(lambda: _titled(stub, "HTTP://A.test", "Home"))
        assert (record.url, record.host, record.depth, record.fetched) == ("http://a.test/", "a.test", 0, True)
        assert (record.in_link_count, record.out_link_count, record.content_fingerprint) == (1, 6, "c1")
        target = await stub.GetUrl(lb_pb.GetUrlRequest(url="http://a.test/z"))
        assert (target.depth, target.fetched) == (1, False)

        for url, code in (("http://unknown.test/", grpc.StatusCode.NOT_FOUND),
                          ("mailto:someone@a.test", grpc.StatusCode.INVALID_ARGUMENT)):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetUrl(lb_pb.GetUrlRequest(url=url))
            assert err.value.code() == code
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetOutLinks(lb_pb.GetLinksRequest(url="http://a.test/", page_token="nonsense"))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    with psycopg.connect(fresh_db) as conn:
        row = conn.execute("SELECT available FROM linkbase.hosts WHERE host = 'down.test'").fetchone()
    assert row == (False,)


async def _titled(stub: Any, url: str, title: str) -> lb_pb.UrlRecord:
    record: lb_pb.UrlRecord = await stub.GetUrl(lb_pb.GetUrlRequest(url=url))
    assert record.title == title
    return record


async def test_poison_messages_are_dead_lettered_and_good_ones_still_processed(
    linkbase: tuple[Service, str], kafka_bootstrap: str
) -> None:
    service, prefix = linkbase
    page_links = prefix + PAGE_LINKS.name
    _produce(kafka_bootstrap, page_links, "k", b"\xff\xff garbage, not a protobuf message")
    _produce(kafka_bootstrap, page_links, "k", pb.PageLinks(url="", depth=0).SerializeToString())
    _produce(kafka_bootstrap, page_links, "k", _page_links(
        "http://good.test/", 0, pb.Link(url="http://good.test/next", link_class=pb.LINK_CLASS_INTERNAL)))
    letters = TopicReader(kafka_bootstrap, prefix, DEAD_LETTERS)
    discovered = TopicReader(kafka_bootstrap, prefix, DISCOVERED_URLS)
    try:
        dead = await letters.wait_for(2)
        assert sorted(letter.source_offset for _k, letter in dead) == [0, 1]
        assert all(letter.source_topic == page_links and letter.service == "linkbase" for _k, letter in dead)
        assert [m.url for _k, m in await discovered.wait_for(1)] == ["http://good.test/next"]
    finally:
        letters.close()
        discovered.close()
    async with authorized_channel(service) as channel:
        record = await linkbase_grpc.LinkbaseServiceStub(channel).GetUrl(
            lb_pb.GetUrlRequest(url="http://good.test/"))
        assert record.fetched


async def test_sites_hosts_history_and_external_links_over_grpc(
    linkbase: tuple[Service, str], kafka_bootstrap: str
) -> None:
    service, prefix = linkbase
    discovered = TopicReader(kafka_bootstrap, prefix, DISCOVERED_URLS)
    async with authorized_channel(service) as channel:
        stub = linkbase_grpc.LinkbaseServiceStub(channel)
        reply = await stub.AddSites(lb_pb.AddSitesRequest(sites=[
            lb_pb.Site(name="Site A", short_name="A", start_url="HTTP://A.Test/?utm_source=mail")]))
        assert reply.accepted == 1
        try:
            [(key, seed)] = await discovered.wait_for(1)
        finally:
            discovered.close()
        assert (key, seed.url, seed.depth, seed.source) == ("a.test", "http://a.test/", 0, pb.DISCOVERY_SOURCE_SEED)

        _produce(kafka_bootstrap, prefix + PAGE_LINKS.name, url_key("http://a.test/"), HOME)
        host = await _eventually(lambda: _host_with_links(stub, "a.test"))
        assert (host.seed.short_name, host.internal_links, host.external_links) == ("A", 3, 1)
        external = await stub.GetExternalLinks(lb_pb.GetExternalLinksRequest(site="a.test"))
        assert [(link.target_url, link.anchor) for link in external.links] == [("http://b.test/", "B")]
        history = await stub.GetUrlHistory(lb_pb.GetUrlHistoryRequest(url="http://a.test/"))
        assert history.url == "http://a.test/" and list(history.revealed) == []
        unknown = [await _refusal(stub.GetHost(lb_pb.GetHostRequest(host="never.test"))),
                   await _refusal(stub.GetUrlHistory(lb_pb.GetUrlHistoryRequest(url="http://never.test/"))),
                   await _refusal(stub.GetExternalLinks(lb_pb.GetExternalLinksRequest(site="never.test")))]
        assert unknown == [grpc.StatusCode.NOT_FOUND] * 3


async def _refusal(call: Awaitable[object]) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value.code()


async def _host_with_links(stub: Any, host: str) -> lb_pb.HostSummary:
    summary: lb_pb.HostSummary = await stub.GetHost(lb_pb.GetHostRequest(host=host))
    assert summary.external_links > 0
    return summary
