"""The linkbase consumer handler: one consumed batch, one database transaction, then the outbox.

Consumes page links, documents, duplicate verdicts and fetch outcomes (dispatched by
topic in :mod:`services.linkbase.batch`). The whole batch is validated before anything
is written, so a poison message raises PoisonMessage (the consumer isolates and
dead-letters it) and a database outage raises psycopg.OperationalError (retried).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from libs.common.kafka.consumer import Record
from services.linkbase.batch import build_batch
from services.linkbase.outbox import DiscoveryPublisher
from services.linkbase.store import LinkStore

log = logging.getLogger(__name__)


class LinkbaseHandler:
    def __init__(self, store: LinkStore, publisher: DiscoveryPublisher) -> None:
        self._store = store
        self._publisher = publisher

    async def __call__(self, records: list[Record[Any]]) -> None:
        # Normalising thousands of links is CPU work: keep the event loop (gRPC) responsive.
        batch = await asyncio.to_thread(build_batch, records)
        await self._store.write(batch)
        try:
            await self._publisher.publish_pending()
        except Exception as exc:  # the rows stay pending; the outbox's own loop retries
            log.warning("announcing discoveries after a batch failed (they stay pending): %s", exc)
