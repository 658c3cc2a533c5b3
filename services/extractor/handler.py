"""Consumes fetch results, produces documents (keyed by content fingerprint), page links and their counts.

In the service's own process a batch is extracted phase by phase in a worker thread, so that
the event loop stays responsive: each phase's links (and link counts) are sent as soon as they
are read, before trafilatura spends tens of milliseconds a page on the text, so the crawl learns
a batch's new URLs that much sooner; the documents follow once the batch is done. A batch with a
poison record raises before the phase holding it sends anything: the consumer hands its records
over again one by one, and the links already sent are not sent twice. With an
:class:`~services.extractor.extraction_pool.ExtractionPool` the batch is spread over its worker
processes and everything is sent once every record could be extracted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence

from prometheus_client import Counter

from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DOCUMENTS, PAGE_LINK_COUNTS, PAGE_LINKS
from libs.common.urls import url_key
from libs.common.wire import messages as pb
from services.extractor.extraction_pool import ExtractionPool
from services.extractor.link_counts import link_counts
from services.extractor.page_extractor import (
    Extracted,
    ExtractionOptions,
    finish_phase,
    read_phase_links,
    should_extract,
)

log = logging.getLogger(__name__)

PAGES = Counter("trawl_extracted_pages_total", "Fetch results handled, by result.", ["result"])


LINKS_SENT_MEMORY = 20_000
"""Records whose links went out ahead of their batch, remembered so that a batch handed over again one
record at a time (after a poison record) does not send them twice."""

RecordId = tuple[str, int, int]


def _record_id(record: Record[pb.FetchResult]) -> RecordId:
    return record.topic.name, record.partition, record.offset


class ExtractorHandler:
    def __init__(self, producer: TopicProducer, options: ExtractionOptions, pool: ExtractionPool | None = None) -> None:
        self._producer = producer
        self._options = options
        self._pool = pool
        self._links_sent: OrderedDict[RecordId, bool] = OrderedDict()

    async def _extract_pooled(self, records: Sequence[Record[pb.FetchResult]]) -> list[Extracted | None]:
        assert self._pool is not None
        wanted = [record.value for record in records if should_extract(record.value)]
        pages = await self._pool.extract(wanted) if wanted else []
        done: list[Extracted] = []
        for page in pages:
            if isinstance(page, PoisonMessage):
                raise page
            done.append(page)
        extracted = iter(done)
        return [next(extracted) if should_extract(record.value) else None for record in records]

    async def _extract_in_phases(self, records: Sequence[Record[pb.FetchResult]]) -> list[Extracted | None]:
        wanted = [i for i, record in enumerate(records) if should_extract(record.value)]
        values = [records[i].value for i in wanted]
        out: list[Extracted | None] = [None] * len(records)
        start = 0
        while start < len(values):
            phase = await asyncio.to_thread(read_phase_links, values, start, self._options)
            if phase.poison:
                raise phase.poison[0][1]
            for index, links in phase.links:
                self._send_ahead(records[wanted[index]], links)
            for index, extracted in await asyncio.to_thread(finish_phase, phase, self._options):
                out[wanted[index]] = extracted
            start = phase.end
        return out

    def _send_links(self, links: pb.PageLinks) -> None:
        self._producer.send(PAGE_LINKS, url_key(links.url), links)
        self._producer.send(PAGE_LINK_COUNTS, links.host, link_counts(links))

    def _send_ahead(self, record: Record[pb.FetchResult], links: pb.PageLinks) -> None:
        """Sends a record's links before its batch is done, once however often the record is handed over."""
        ident = _record_id(record)
        if ident in self._links_sent:
            return
        self._send_links(links)
        self._links_sent[ident] = True
        while len(self._links_sent) > LINKS_SENT_MEMORY:
            self._links_sent.popitem(last=False)

    async def __call__(self, records: Sequence[Record[pb.FetchResult]]) -> None:
        if self._pool is not None:
            results = await self._extract_pooled(records)
        else:
            results = await self._extract_in_phases(records)
        for record, result in zip(records, results, strict=True):
            if result is None:
                PAGES.labels("skipped").inc()
                continue
            if result.document.extraction_error:
                PAGES.labels("fallback").inc()
                log.info(
                    "extraction fell back: %s", result.document.extraction_error, extra={"url": result.document.url}
                )
            else:
                PAGES.labels("ok").inc()
            self._producer.send(
                DOCUMENTS, result.document.content_fingerprint or url_key(result.document.url), result.document
            )
            if not self._links_sent.pop(_record_id(record), False):
                self._send_links(result.links)
