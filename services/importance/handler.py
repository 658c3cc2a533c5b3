"""Applies seeds, crawled pages (page links) and incoming cash transfers to the owned partitions.

The consumer hands each topic's records to its own method (:meth:`ImportanceHandler.topic_handlers`).
The three inputs are keyed by URL fingerprint and co-partitioned (the consumer uses the range
assignor), so a record's partition number is the partition whose state it changes.
Records already applied (offset below the one stored with the state, for the topic's
incarnation: :mod:`libs.common.kafka.stored_offsets`) and transfers
already applied (sequence at or below the last one from their source) are skipped, so a
batch delivered again changes nothing. A batch is applied record by record, in order,
then committed as a whole; if anything fails before the commit, the partitions it
touched are dropped from memory and loaded again on the retry.

After the records, each partition the batch touched replays as many of its crawled pages as
its crawls earned (``Shard.replay``): the replays' transfers and state changes are committed
with the batch, so a batch applied again after a crash replays again from the same state.

Automatic garbage collection is paused while a batch is applied: the batch allocates
hundreds of thousands of short-lived objects (decoded links, lists, messages) and no
reference cycles, and the collector's passes over them cost several per cent of the CPU
time per link transfer; it runs again between batches (:mod:`libs.common.collector`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from prometheus_client import Counter

from libs.common.collector import collector_paused
from libs.common.errors import PoisonMessage
from libs.common.followed_links import followed
from libs.common.kafka.consumer import Record, TopicHandler
from libs.common.kafka.partitioner import fingerprint_partitions
from libs.common.kafka.stored_offsets import applied_offset, record_applied
from libs.common.topics import CASH_TRANSFERS, PAGE_LINKS, SEEDS
from libs.common.url_keys import key_text, normalized_fingerprint
from libs.common.urls import InvalidUrl, normalize_url
from libs.common.wire import messages as pb
from services.importance.owned_partitions import OwnedPartitions, PartitionState
from services.importance.settings import ImportanceSettings
from services.importance.transfers import accept, transfer_lists

log = logging.getLogger(__name__)

VISITS = Counter("trawl_importance_visits_total", "Crawled pages applied to the cash state.")


def page_key(raw: str, record_key: str) -> tuple[str, int]:
    """The crawled page's normalised URL and fingerprint.

    The extractor keys page links by the fingerprint of the normalised URL, so when the URL as
    sent hashes to the record's key it is normalised already and is not parsed again.
    """
    fp = normalized_fingerprint(raw)
    if key_text(fp) == record_key:
        return raw, fp
    try:
        url = normalize_url(raw)
    except InvalidUrl as exc:
        raise PoisonMessage(f"page links for invalid URL {raw[:200]!r}: {exc.reason}") from exc
    return url, normalized_fingerprint(url)


R = TypeVar("R", bound=Record[Any])

_Visit = tuple[int, str, list[int], list[str], list[int]]
"""A crawled page's fingerprint and URL, and its followed links' fingerprints, URLs and owning partitions."""


class _Seed(NamedTuple):
    """A seeded page."""

    fp: int
    url: str


_Step = tuple[Record[Any], _Visit | _Seed | None]
"""A record and what it applies: a crawl, a seed, or (None) the cash transfer it carries."""


class ImportanceHandler:
    def __init__(self, partitions: OwnedPartitions, follow_external: bool = True,
                 max_link_occurrences: int = ImportanceSettings.max_link_occurrences) -> None:
        """``max_link_occurrences``: a link the page carries several times counts up to this many times."""
        self._partitions = partitions
        self._follow_external = follow_external
        self._max_occurrences = max_link_occurrences

    def topic_handlers(self) -> list[TopicHandler[Any]]:
        """What the consumer hands each input topic's records to."""
        return [TopicHandler(SEEDS, self.seeds), TopicHandler(PAGE_LINKS, self.page_links),
                TopicHandler(CASH_TRANSFERS, self.cash_transfers)]

    async def seeds(self, records: Sequence[Record[pb.Seed]]) -> None:
        """Adds seeded pages before their first crawl (``Shard.seed``)."""
        async with self._partitions.lock:
            with collector_paused():
                seeds: list[_Step] = []
                for record in self._owned(records):
                    url, fp = page_key(record.value.url, record.key)
                    seeds.append((record, _Seed(fp, url)))
                await self._apply(seeds)

    async def page_links(self, records: Sequence[Record[pb.PageLinks]]) -> None:
        """Applies crawled pages: each passes its cash on along its followed links."""
        async with self._partitions.lock:
            with collector_paused():
                pages: list[tuple[Record[Any], int, str, list[int], list[str]]] = []
                for record in self._owned(records):
                    msg = record.value
                    url, fp = page_key(msg.url, record.key)
                    try:
                        keys, urls = followed(msg, fp, self._follow_external, self._max_occurrences)
                    except ValueError as exc:
                        raise PoisonMessage(f"page links for {url[:200]!r}: {exc}") from exc
                    pages.append((record, fp, url, keys, urls))
                parts = fingerprint_partitions([k for page in pages for k in page[3]], self._partitions.partitions)
                plan: list[_Step] = []
                at = 0
                for record, fp, url, keys, urls in pages:
                    plan.append((record, (fp, url, keys, urls, parts[at:at + len(keys)])))
                    at += len(keys)
                await self._apply(plan)

    async def cash_transfers(self, records: Sequence[Record[pb.CashTransfer]]) -> None:
        """Applies the cash other partitions sent to the pages of the owned ones."""
        async with self._partitions.lock:
            with collector_paused():
                await self._apply([(record, None) for record in self._owned(records)])

    def _owned(self, records: Sequence[R]) -> list[R]:
        """The records of partitions still owned (one revoked while the batch was under way: the new
        owner applies it)."""
        owned = self._partitions
        owned.drop_unowned()
        return [record for record in records if owned.owns(record.partition)]

    async def _apply(self, plan: list[_Step]) -> None:
        """Applies each record (a crawl, a seed, or a transfer: None) not applied before, then replays,
        announces and commits the partitions it touched."""
        owned = self._partitions
        touched: dict[int, PartitionState] = {}
        try:
            for record, what in plan:
                state = await owned.get(record.partition)
                topic = record.topic.name
                if record.offset < applied_offset(state.applied, topic, record.incarnation):
                    continue  # applied before a crash or a rebalance
                record_applied(state.applied, topic, record.incarnation, record.offset + 1)
                touched[record.partition] = state
                if what is None:
                    self._receive(state, record)
                elif isinstance(what, _Seed):
                    state.shard.seed(what.fp, what.url)
                else:
                    fp, url, keys, urls, owners = what
                    state.shard.visit(fp, url, keys, urls, owners,
                                      (record.value.fetched_at_ms or record.timestamp_ms) / 1000.0)
                    VISITS.inc()
            if touched:
                states = list(touched.values())
                now_ms = int(time.time() * 1000)
                for state in states:
                    state.shard.replay(now_ms / 1000.0)
                for state in await owned.deliver_locally(states):
                    if state.partition not in touched:
                        touched[state.partition] = state
                        state.shard.replay(now_ms / 1000.0)
                        states.append(state)
                await owned.announce(states, now_ms)
                await owned.commit(states, now_ms)
        except BaseException:
            for partition in touched:
                owned.drop(partition)
            raise

    @staticmethod
    def _receive(state: PartitionState, record: Record[Any]) -> None:
        message: pb.CashTransfer = record.value
        try:
            fresh = accept(message, state.received_seq, record.partition)
        except ValueError as exc:
            raise PoisonMessage(str(exc)) from exc
        if fresh:
            if not len(message.urls) == len(message.cash) == len(message.fingerprints):
                raise PoisonMessage("cash transfer with lists of different lengths")
            state.shard.receive(*transfer_lists(message, record.raw_value))
