"""The dedup consumer handler: a verdict for every document, keyed by the URL's key.

The first URL recorded with a content fingerprint owns it: a document is a duplicate iff
the index answers with another URL, so a redelivered first copy stays unique. A document
without text has nothing to compare: it is unique with similarity 0 and is not recorded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from libs.common import metrics
from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS
from libs.common.urls import InvalidUrl, url_key
from libs.common.wire import messages as pb
from services.dedup.index import Claim, FingerprintIndex

log = logging.getLogger(__name__)

EXACT_SIMILARITY = 1.0


def _validated(record: Record[Any]) -> tuple[pb.Document, str]:
    """The document and its verdict key; PoisonMessage when it cannot be judged."""
    if record.topic.name != DOCUMENTS.name:
        raise PoisonMessage(f"dedup does not handle topic {record.topic.name}")
    doc: pb.Document = record.value
    if not doc.url.strip():
        raise PoisonMessage("document without a url")
    try:
        key = url_key(doc.url)
    except InvalidUrl as exc:
        raise PoisonMessage(f"document url {doc.url[:200]!r} is not crawlable: {exc.reason}") from exc
    if "\x00" in doc.url or "\x00" in doc.content_fingerprint:
        raise PoisonMessage(f"document {doc.url[:200]!r} has a NUL character in its url or fingerprint")
    if doc.text.strip() and not doc.content_fingerprint:
        raise PoisonMessage(f"document {doc.url[:200]!r} has text but no content fingerprint")
    return doc, key


def claim_rounds(claims: list[Claim]) -> list[list[Claim]]:
    """Cuts claims, in order, into runs in which no URL appears twice (the index answers per URL).

    A URL is claimed twice in one batch only when it was fetched twice with different
    content; the runs are claimed one after the other, so batch order decides who is first.
    """
    rounds: list[list[Claim]] = [[]]
    urls: set[str] = set()
    for claim in dict.fromkeys(claims):
        if claim.url in urls:
            rounds.append([])
            urls.clear()
        urls.add(claim.url)
        rounds[-1].append(claim)
    return [members for members in rounds if members]


class DedupHandler:
    def __init__(
        self, index: FingerprintIndex, producer: TopicProducer, clock: Callable[[], float] = time.time
    ) -> None:
        self._index = index
        self._producer = producer
        self._clock = clock

    async def __call__(self, records: list[Record[Any]]) -> None:
        docs = [_validated(record) for record in records]
        answers: dict[Claim, str] = {}
        for claims in claim_rounds([Claim(doc.url, doc.content_fingerprint) for doc, _key in docs if doc.text.strip()]):
            first_urls = await self._index.claim(claims)
            answers.update((claim, first_urls[claim.url]) for claim in claims)
        now_ms = int(self._clock() * 1000)
        duplicates = 0
        for doc, key in docs:
            first = answers.get(Claim(doc.url, doc.content_fingerprint), doc.url)
            duplicate = first != doc.url
            duplicates += duplicate
            verdict = pb.DuplicateVerdict(
                url=doc.url,
                host=doc.host,
                content_fingerprint=doc.content_fingerprint,
                duplicate=duplicate,
                duplicate_of=first if duplicate else "",
                similarity=EXACT_SIMILARITY if duplicate else 0.0,
                decided_at_ms=now_ms,
            )
            self._producer.send(DUPLICATE_VERDICTS, key, verdict)
        metrics.MESSAGES_PRODUCED.labels("dedup", DUPLICATE_VERDICTS.name).inc(len(docs))
        log.debug("judged %s documents, %s duplicates", len(docs), duplicates)
