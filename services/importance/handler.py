"""Applies crawled pages (page links) to the OPIC state and announces new priorities."""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import Counter, Gauge

from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import IMPORTANCE_UPDATES
from libs.common.urls import InvalidUrl, normalize_url, url_fingerprint, url_host
from libs.common.wire import messages as pb
from services.importance.cash_store import CashStore
from services.importance.opic import PageCash, distribute_virtual, effective_cash, importance, new_page, visit
from services.importance.settings import ImportanceSettings

log = logging.getLogger(__name__)

CONVERGENCE = Gauge("trawl_importance_convergence", "OPIC error bound 1/|H| (lower is better).")
VISITS = Counter("trawl_importance_visits_total", "Crawled pages applied to the cash state.")

Target = tuple[int, str, str]


def followed_targets(msg: pb.PageLinks, page_fp: int, follow_external: bool) -> list[Target]:
    """Distinct (fp, url, host) of the links cash flows over: followable, not to the page itself."""
    if msg.nofollow:
        return []
    out: dict[int, Target] = {}
    for link in msg.links:
        if link.nofollow or link.link_class == pb.LINK_CLASS_BAD:
            continue
        if link.link_class == pb.LINK_CLASS_EXTERNAL and not follow_external:
            continue
        try:
            url = normalize_url(link.url)
        except InvalidUrl:
            continue
        fp = url_fingerprint(url)
        if fp != page_fp and fp not in out:
            out[fp] = (fp, url, url_host(url))
    return list(out.values())


class ImportanceHandler:
    def __init__(self, store: CashStore, producer: TopicProducer, settings: ImportanceSettings) -> None:
        self._store = store
        self._producer = producer
        self._settings = settings

    async def __call__(self, records: list[Record[Any]]) -> None:
        parsed: list[tuple[Record[Any], Target, list[Target]]] = []
        for record in records:
            msg: pb.PageLinks = record.value
            try:
                url = normalize_url(msg.url)
            except InvalidUrl as exc:
                raise PoisonMessage(f"page links for invalid URL {msg.url[:200]!r}: {exc.reason}") from exc
            fp = url_fingerprint(url)
            parsed.append((record, (fp, url, url_host(url)), followed_targets(msg, fp, self._settings.follow_external)))
        async with self._store.transaction() as conn:
            totals = await self._store.lock_totals(conn)
            applied = await self._store.applied_offsets(conn)
            fps = {p[1][0] for p in parsed} | {t[0] for p in parsed for t in p[2]}
            pages = await self._store.load_pages(conn, fps)
            touched: dict[int, PageCash] = {}

            def get(target: Target) -> PageCash:
                page = pages.get(target[0])
                if page is None:
                    page = pages[target[0]] = new_page(target[0], target[1], target[2], totals)
                touched[target[0]] = page
                return page

            offsets: dict[tuple[str, int], int] = {}
            for record, page_t, targets in parsed:
                key = (record.topic.name, record.partition)
                if record.offset < applied.get(key, 0):
                    continue  # already applied before a crash or rebalance
                offsets[key] = max(offsets.get(key, 0), record.offset + 1)
                page = get(page_t)
                visit(page, [get(t) for t in targets], totals, record.value.fetched_at_ms or record.timestamp_ms)
                VISITS.inc()
            distribute_virtual(totals)
            await self._store.save(conn, list(touched.values()), totals, offsets)
        if totals.history_total > 0:
            CONVERGENCE.set(1.0 / totals.history_total)
        now_ms = int(time.time() * 1000)
        for page in touched.values():
            self._producer.send(
                IMPORTANCE_UPDATES,
                page.host,
                pb.ImportanceUpdate(
                    url=page.url, host=page.host, cash=effective_cash(page, totals), history=page.history,
                    importance=importance(page, totals), updated_at_ms=now_ms,
                ),
            )
