"""Sent URLs: an outcome of a request this scheduler sent is matched without normalising its URL."""

from __future__ import annotations

import asyncio
from typing import Any

from libs.common.kafka.consumer import Record
from libs.common.topics import FETCH_OUTCOMES
from libs.common.url_keys import normalized_fingerprint
from libs.common.wire import messages as pb
from services.scheduler.frontier.store import Outcome
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.sent_urls import SentUrls
from services.scheduler.settings import SchedulerSettings


def test_a_sent_url_is_answered_once_and_the_oldest_go_past_the_capacity() -> None:
    sent = SentUrls(2)
    sent.sent("http://a.test/1", "a.test", 1)
    sent.sent("http://a.test/2", "a.test", 2)
    sent.sent("http://a.test/1", "a.test", 1)  # sent again: the newest now
    sent.sent("http://a.test/3", "a.test", 3)
    assert len(sent) == 2
    assert sent.answered("http://a.test/2") is None
    assert sent.answered("http://a.test/1") == ("a.test", 1)
    assert sent.answered("http://a.test/1") is None  # a redelivered outcome is normalised as any other


class _Store:
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    async def apply_outcomes(self, rows: list[Outcome], max_attempts: int, retry_base: float) -> int:
        self.outcomes.extend(rows)
        return len(rows)


def _outcome(url: str, request_id: str) -> Record[Any]:
    msg = pb.FetchOutcome(request_id=request_id, url=url, host="", status=pb.FETCH_STATUS_OK, http_status=200,
                          fetched_at_ms=1_000)
    return Record(FETCH_OUTCOMES, 0, 0, "b.test", msg, 1_000, b"", msg.SerializeToString())


def test_outcomes_of_sent_and_unknown_urls_name_the_same_page() -> None:
    store = _Store()
    sent = SentUrls(10)
    handler = SchedulerHandler(store, SchedulerSettings(), sent=sent)  # type: ignore[arg-type]
    url = "http://b.test/page"
    sent.sent(url, "b.test", normalized_fingerprint(url))
    asyncio.run(handler.fetch_outcomes([_outcome(url, "r1"), _outcome("HTTP://B.test:80/page", "r2")]))
    first, second = store.outcomes
    assert (first.url_fp, first.host) == (second.url_fp, second.host) == (normalized_fingerprint(url), "b.test")
    assert len(sent) == 0
