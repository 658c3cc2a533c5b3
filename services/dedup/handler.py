"""The dedup consumer handler: a verdict for every document, keyed by the URL's key.

Exact copies first: the first URL recorded with a content fingerprint owns it, and a
document is an exact duplicate iff the fingerprint index answers with another URL (so a
redelivered first copy stays unique). A document that is no exact copy is sketched (w-word
shingles, MinHash, LSH bands) and judged by the near-duplicate index, which names the
representative of the cluster it joins. A document without text has nothing to compare: it
is unique with similarity 0 and is not recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from libs.common import metrics
from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DUPLICATE_VERDICTS
from libs.common.url_keys import key_fingerprint
from libs.common.urls import InvalidUrl, url_key
from libs.common.wire import messages as pb
from services.dedup.index import Claim, FingerprintIndex
from services.dedup.judge import DuplicateJudge
from services.dedup.near_clusters import NearClaim
from services.dedup.near_store import NearAnswer, NearDuplicateIndex

log = logging.getLogger(__name__)

EXACT_SIMILARITY = 1.0
_VERDICT_LABELS = {pb.DUPLICATE_KIND_UNSPECIFIED: "unique", pb.DUPLICATE_KIND_EXACT: "exact",
                   pb.DUPLICATE_KIND_NEAR: "near"}


def _validated(record: Record[pb.Document]) -> tuple[pb.Document, str]:
    """The document and its verdict key; PoisonMessage when it cannot be judged."""
    doc = record.value
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


def url_rounds(claims: list[NearClaim]) -> list[list[NearClaim]]:
    """Cuts near claims, in order, into runs in which no URL appears twice."""
    rounds: list[list[NearClaim]] = [[]]
    urls: set[str] = set()
    for claim in claims:
        if claim.url in urls:
            rounds.append([])
            urls.clear()
        urls.add(claim.url)
        rounds[-1].append(claim)
    return [members for members in rounds if members]


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
        self,
        index: FingerprintIndex,
        near: NearDuplicateIndex,
        judge: DuplicateJudge,
        producer: TopicProducer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._index = index
        self._near = near
        self._judge = judge
        self._producer = producer
        self._clock = clock

    async def __call__(self, records: Sequence[Record[pb.Document]]) -> None:
        docs = [_validated(record) for record in records]
        firsts: dict[Claim, str] = {}
        for claims in claim_rounds([Claim(doc.url, doc.content_fingerprint) for doc, _key in docs if doc.text.strip()]):
            first_urls = await self._index.claim(claims)
            firsts.update((claim, first_urls[claim.url]) for claim in claims)
        # Sketching is CPU work (a few hundred microseconds a page): keep the event loop responsive.
        near_claims = await asyncio.to_thread(self._sketch, [
            (doc, key) for doc, key in docs
            if doc.text.strip() and firsts.get(Claim(doc.url, doc.content_fingerprint), doc.url) == doc.url
        ])
        near: dict[tuple[str, str], NearAnswer] = {}
        for members in url_rounds(near_claims):
            answers = await self._near.judge(members)
            near.update(((c.url, c.content_fp), answers[c.url]) for c in members)
        simhashes = {(c.url, c.content_fp): c.sketch.simhash for c in near_claims}
        now_ms = int(self._clock() * 1000)
        duplicates = 0
        for doc, key in docs:
            verdict = pb.DuplicateVerdict(url=doc.url, host=doc.host, content_fingerprint=doc.content_fingerprint,
                                          decided_at_ms=now_ms,
                                          simhash=simhashes.get((doc.url, doc.content_fingerprint), 0))
            first = firsts.get(Claim(doc.url, doc.content_fingerprint), doc.url)
            answer = near.get((doc.url, doc.content_fingerprint))
            if first != doc.url:
                verdict.duplicate, verdict.duplicate_of = True, first
                verdict.similarity, verdict.kind = EXACT_SIMILARITY, pb.DUPLICATE_KIND_EXACT
            elif answer is not None and answer.duplicate_of is not None:
                verdict.duplicate, verdict.duplicate_of = True, answer.duplicate_of
                verdict.similarity, verdict.kind = answer.similarity, pb.DUPLICATE_KIND_NEAR
            duplicates += verdict.duplicate
            metrics.DEDUP_VERDICTS.labels(_VERDICT_LABELS[verdict.kind]).inc()
            self._producer.send(DUPLICATE_VERDICTS, key, verdict)
        metrics.MESSAGES_PRODUCED.labels("dedup", DUPLICATE_VERDICTS.name).inc(len(docs))
        log.debug("judged %s documents, %s duplicates", len(docs), duplicates)

    def _sketch(self, docs: list[tuple[pb.Document, str]]) -> list[NearClaim]:
        return [
            NearClaim(doc.url, key_fingerprint(key), doc.content_fingerprint, self._judge.sketch(doc.text),
                      doc.fetched_at_ms)
            for doc, key in docs
        ]
