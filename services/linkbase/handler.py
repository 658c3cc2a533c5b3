"""The linkbase consumer handler: a consumed batch in pipelined chunks, then the outbox.

Consumes page links, documents, duplicate verdicts and fetch outcomes, each topic's records
handed to its own method (:meth:`LinkbaseHandler.topic_handlers`) and added to the rows by that
topic's adder (:mod:`services.linkbase.batch`). A batch is cut into chunks of ``chunk`` messages,
each written in one transaction (or one per chunk and host group, the groups written
concurrently on their own connections). The chunks' rows are built ahead, one chunk after
the other, on the event loop in slices of a few messages: whenever the writers wait for the
database, the next rows are being built, and a reply from the database waits at most one
slice (a thread would share the interpreter lock and hand it over only every switch
interval, 5 ms, per reply). A poison message raises PoisonMessage before its chunk is
written (the consumer then retries the batch message by message, and dead-letters the
poison; rewriting the chunks already written changes nothing, every write being
idempotent); a database outage raises psycopg.OperationalError (retried).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from libs.common.collector import collector_paused
from libs.common.kafka.consumer import Record, TopicHandler
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, PAGE_LINKS
from libs.common.wire import messages as pb
from services.linkbase.batch import (
    LinkbaseBatch,
    add_document,
    add_outcome,
    add_page_links,
    add_record,
    add_verdict,
)
from services.linkbase.group_writer import GroupWriter
from services.linkbase.outbox import DiscoveryPublisher
from services.linkbase.store import LinkStore

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Record[Any])

SLICE = 2
"""Messages built between two turns of the event loop (about 0.5 ms of pages of 50 links; with 8, a
database reply waiting up to 2 ms, 10 million links stored: 6-8% fewer links per second)."""


async def build_ahead(chunks: list[Sequence[R]], built: list[asyncio.Future[LinkbaseBatch]],
                      add: Callable[[LinkbaseBatch, R], None] = add_record) -> None:
    """Builds the chunks in order, each into its future, yielding to the event loop every :data:`SLICE` messages.

    A poison message fails its chunk's future and ends the building (the later chunks' futures are cancelled).
    """
    for number, records in enumerate(chunks):
        batch = LinkbaseBatch()
        try:
            for start in range(0, len(records), SLICE):
                for record in records[start : start + SLICE]:
                    add(batch, record)
                await asyncio.sleep(0)
        except Exception as exc:
            built[number].set_exception(exc)
            for later in built[number + 1 :]:
                later.cancel()
            return
        built[number].set_result(batch)


async def write_pipelined(store: LinkStore, records: Sequence[R], chunk: int, groups: int = 1,
                          add: Callable[[LinkbaseBatch, R], None] = add_record) -> None:
    """Writes the chunks in order while the next ones are built (:func:`build_ahead`, each record by ``add``).

    One transaction per chunk, or with ``groups`` > 1 one per chunk and host group, the groups
    written side by side (:mod:`services.linkbase.group_writer`). The garbage collector is held off
    meanwhile (:mod:`libs.common.collector`).
    """
    with collector_paused():
        await _write_chunks(store, records, chunk, groups, add)


async def _write_chunks(store: LinkStore, records: Sequence[R], chunk: int, groups: int,
                        add: Callable[[LinkbaseBatch, R], None]) -> None:
    writer = GroupWriter(store, groups) if groups > 1 else None
    size = max(1, chunk)
    chunks = [records[i : i + size] for i in range(0, len(records), size)]
    loop = asyncio.get_running_loop()
    built: list[asyncio.Future[LinkbaseBatch]] = [loop.create_future() for _ in chunks]
    builder = asyncio.ensure_future(build_ahead(chunks, built, add))
    try:
        for future in built:
            batch = await future
            if writer is None:
                await store.write(batch)
            else:
                await writer.write(batch)
        if writer is not None:
            await writer.flush()
    finally:
        if not builder.done():  # the write failed: do not leave the building behind
            builder.cancel()
        await asyncio.gather(builder, return_exceptions=True)
        for future in built:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: a later chunk's failure is not reported as never awaited


class LinkbaseHandler:
    def __init__(self, store: LinkStore, publisher: DiscoveryPublisher, chunk: int = 100, groups: int = 1) -> None:
        self._store = store
        self._publisher = publisher
        self._chunk = chunk
        self._groups = groups

    def topic_handlers(self) -> list[TopicHandler[Any]]:
        """What the consumer hands each input topic's records to."""
        return [
            TopicHandler(PAGE_LINKS, self.page_links),
            TopicHandler(DOCUMENTS, self.documents),
            TopicHandler(DUPLICATE_VERDICTS, self.verdicts),
            TopicHandler(FETCH_OUTCOMES, self.outcomes),
        ]

    async def page_links(self, records: Sequence[Record[pb.PageLinks]]) -> None:
        await self._write(records, add_page_links)

    async def documents(self, records: Sequence[Record[pb.Document]]) -> None:
        await self._write(records, add_document)

    async def verdicts(self, records: Sequence[Record[pb.DuplicateVerdict]]) -> None:
        await self._write(records, add_verdict)

    async def outcomes(self, records: Sequence[Record[pb.FetchOutcome]]) -> None:
        await self._write(records, add_outcome)

    async def _write(self, records: Sequence[R], add: Callable[[LinkbaseBatch, R], None]) -> None:
        await write_pipelined(self._store, records, self._chunk, self._groups, add)
        try:
            await self._publisher.publish_pending()
        except Exception as exc:  # the rows stay pending; the outbox's own loop retries
            log.warning("announcing discoveries after a batch failed (they stay pending): %s", exc)
