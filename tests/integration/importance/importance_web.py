"""A small web, its page-links records and helpers to read the importance state back, for the integration tests."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from libs.common.db.pool import Database
from libs.common.followed_links import fill_followed
from libs.common.kafka.consumer import Record
from libs.common.kafka.partitioner import fingerprint_partition
from libs.common.topics import CASH_TRANSFERS, PAGE_LINKS
from libs.common.url_keys import key_text, normalized_fingerprint
from libs.common.wire import messages as pb
from libs.simweb.webgraph import build_web_graph, web_like_config
from services.importance.cash_store import CashStore
from services.importance.engine import OpicEngine
from services.importance.settings import ImportanceSettings

MIGRATIONS = Path("services/importance/migrations")
PARTITIONS = PAGE_LINKS.partitions
TOTAL = 100.0
WEB = build_web_graph(web_like_config(400, seed=5))
SETTINGS = ImportanceSettings(announce_min_change=0.0)  # every change announced: the tests compare them


def hosts_of(url: str) -> str:
    return url.split("/")[2]


def page_links(node: int, fetched_at_ms: int = 1_700_000_000_000) -> pb.PageLinks:
    url = WEB.urls[node]
    links = []
    for t in WEB.out_links[node]:
        target = WEB.urls[t]
        same = hosts_of(target) == hosts_of(url)
        links.append(pb.Link(url=target, link_class=pb.LINK_CLASS_INTERNAL if same else pb.LINK_CLASS_EXTERNAL))
    if node % 11 == 0:  # never followed: no cash may flow over them
        links.append(pb.Link(url="javascript:void(0)", link_class=pb.LINK_CLASS_BAD, bad_reason="unsupported_scheme"))
        links.append(pb.Link(url=f"{url}secret", link_class=pb.LINK_CLASS_INTERNAL, nofollow=True))
    msg = pb.PageLinks(url=url, host=hosts_of(url), fetched_at_ms=fetched_at_ms, links=links)
    if node % 2 == 0:  # as the extractor sends them; odd pages as sent before the followed lists existed
        fill_followed(msg)
    return msg


def partition_of(url: str) -> int:
    return fingerprint_partition(normalized_fingerprint(url), PARTITIONS)


def crawl_order() -> list[int]:
    """Every page once, breadth-first from the home pages."""
    seen = set(WEB.home_pages)
    order = list(WEB.home_pages)
    for node in order:
        for t in WEB.out_links[node]:
            if t not in seen:
                seen.add(t)
                order.append(t)
    return order


class PageLinksFeed:
    """Page-links records as the consumer would hand them over: right partition, growing offsets."""

    def __init__(self) -> None:
        self.next_offset = [0] * PARTITIONS
        self.sent: list[Record[Any]] = []

    def records(self, nodes: list[int]) -> list[Record[Any]]:
        out = []
        for node in nodes:
            msg = page_links(node)
            p = partition_of(msg.url)
            out.append(Record(PAGE_LINKS, p, self.next_offset[p], key_text(normalized_fingerprint(msg.url)), msg,
                              msg.fetched_at_ms, None, None))
            self.next_offset[p] += 1
        self.sent += out
        return out


class TransferReader:
    """Reads the cash-transfers topic from the beginning, as records, without a consumer group."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self.seen: list[Record[Any]] = []

    def _poll(self) -> int:
        got = 0
        for msg in self._consumer.consume(1000, 0.3):
            partition, offset = msg.partition(), msg.offset()
            if msg.error() is None and partition is not None and offset is not None:
                value = pb.CashTransfer.FromString(msg.value() or b"")
                self.seen.append(Record(CASH_TRANSFERS, partition, offset, (msg.key() or b"").decode(),
                                        value, msg.timestamp()[1], msg.key(), msg.value()))
                got += 1
        return got

    async def new(self, settle: float = 1.0) -> list[Record[Any]]:
        """Everything that arrived since the last call (waits until nothing more comes for ``settle`` s)."""
        start = len(self.seen)
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < settle:
            if await asyncio.to_thread(self._poll):
                quiet_since = time.monotonic()
        return self.seen[start:]

    def close(self) -> None:
        self._consumer.close()


@dataclass
class Audit:
    accounted: float
    in_flight: float
    visits: int
    pages: int

    @property
    def total(self) -> float:
        return self.accounted + self.in_flight


async def audit(db: Database) -> Audit:
    """Loads every partition's committed state from PostgreSQL and sums its cash exactly."""
    store = CashStore(db, PARTITIONS, TOTAL)
    parts, flight, visits, pages = [], [], 0, 0
    for p in range(PARTITIONS):
        loaded = await store.load(p, lambda: OpicEngine(SETTINGS.opic_config(PARTITIONS), TOTAL / PARTITIONS))
        engine = loaded.engine
        parts.append(engine.accounted())
        flight += [engine.totals.sent, -engine.totals.received]
        visits += sum(engine.visits)
        pages += len(engine)
    return Audit(math.fsum(parts), math.fsum(flight), visits, pages)


def chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
