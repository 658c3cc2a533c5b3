"""The linkbase consumer handler: a consumed batch in pipelined chunks, then the outbox.

Consumes page links, documents, duplicate verdicts and fetch outcomes (dispatched by
topic in :mod:`services.linkbase.batch`). A batch is cut into chunks of ``chunk`` messages,
each validated and turned into rows (CPU work, in a thread) while the previous chunk is
being written (database work, one transaction per chunk, or per chunk and host group with
the groups written concurrently on their own connections), so the two overlap. A poison
message raises PoisonMessage before its chunk is written (the consumer then retries the
batch message by message, and dead-letters the poison; rewriting the chunks already
written changes nothing, every write being idempotent); a database outage raises
psycopg.OperationalError (retried).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from libs.common.kafka.consumer import Record
from services.linkbase.batch import LinkbaseBatch, build_batch
from services.linkbase.collector import collector_paused
from services.linkbase.group_writer import GroupWriter
from services.linkbase.outbox import DiscoveryPublisher
from services.linkbase.store import LinkStore

log = logging.getLogger(__name__)


async def write_pipelined(store: LinkStore, records: list[Record[Any]], chunk: int, groups: int = 1) -> None:
    """Builds chunk k + 1 in a thread while chunk k is written.

    One transaction per chunk, or with ``groups`` > 1 one per chunk and host group, the groups
    written side by side (:mod:`services.linkbase.group_writer`). The garbage collector is held off
    meanwhile (:mod:`services.linkbase.collector`).
    """
    with collector_paused():
        await _write_chunks(store, records, chunk, groups)


async def _write_chunks(store: LinkStore, records: list[Record[Any]], chunk: int, groups: int) -> None:
    writer = GroupWriter(store, groups) if groups > 1 else None
    size = max(1, chunk)
    chunks = [records[i : i + size] for i in range(0, len(records), size)]
    building: asyncio.Task[LinkbaseBatch] | None = None
    try:
        for number in range(len(chunks)):
            batch = await (building or asyncio.to_thread(build_batch, chunks[number]))
            building = None
            if number + 1 < len(chunks):
                building = asyncio.ensure_future(asyncio.to_thread(build_batch, chunks[number + 1]))
            if writer is None:
                await store.write(batch)
            else:
                await writer.write(batch)
        if writer is not None:
            await writer.flush()
    finally:
        if building is not None:  # the write failed: do not leave the next build behind
            await asyncio.gather(building, return_exceptions=True)


class LinkbaseHandler:
    def __init__(self, store: LinkStore, publisher: DiscoveryPublisher, chunk: int = 100, groups: int = 1) -> None:
        self._store = store
        self._publisher = publisher
        self._chunk = chunk
        self._groups = groups

    async def __call__(self, records: list[Record[Any]]) -> None:
        await write_pipelined(self._store, records, self._chunk, self._groups)
        try:
            await self._publisher.publish_pending()
        except Exception as exc:  # the rows stay pending; the outbox's own loop retries
            log.warning("announcing discoveries after a batch failed (they stay pending): %s", exc)
