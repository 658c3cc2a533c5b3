"""Consumes fetch results, produces documents (keyed by content fingerprint), page links and their counts.

A batch is extracted in one call (:func:`~services.extractor.page_extractor.extract_pages`,
in a worker thread so that the event loop stays responsive, or spread over the worker
processes of an :class:`~services.extractor.extraction_pool.ExtractionPool`) and sent only
when every record in it could be extracted.
"""

from __future__ import annotations

import asyncio
import logging
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
from services.extractor.page_extractor import Extracted, ExtractionOptions, extract_pages, should_extract

log = logging.getLogger(__name__)

PAGES = Counter("trawl_extracted_pages_total", "Fetch results handled, by result.", ["result"])


class ExtractorHandler:
    def __init__(self, producer: TopicProducer, options: ExtractionOptions, pool: ExtractionPool | None = None) -> None:
        self._producer = producer
        self._options = options
        self._pool = pool

    async def _extract_all(self, records: Sequence[Record[pb.FetchResult]]) -> list[Extracted | Exception | None]:
        wanted = [record.value for record in records if should_extract(record.value)]
        pages: list[Extracted | PoisonMessage]
        if self._pool is not None and wanted:
            pages = await self._pool.extract(wanted)
        else:
            pages = await asyncio.to_thread(extract_pages, wanted, self._options)
        extracted = iter(pages)
        out: list[Extracted | Exception | None] = []
        for record in records:
            if should_extract(record.value):
                out.append(next(extracted))
            else:
                PAGES.labels("skipped").inc()
                out.append(None)
        return out

    async def __call__(self, records: Sequence[Record[pb.FetchResult]]) -> None:
        results = await self._extract_all(records)
        poison = next((result for result in results if isinstance(result, Exception)), None)
        if poison is not None:
            # Nothing is sent: the consumer splits the batch and hands the records over one by
            # one, so the good ones are sent exactly once and only the poison is dead-lettered.
            raise poison
        for result in results:
            if result is None or isinstance(result, Exception):
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
            self._producer.send(PAGE_LINKS, url_key(result.links.url), result.links)
            self._producer.send(PAGE_LINK_COUNTS, result.links.host, link_counts(result.links))
