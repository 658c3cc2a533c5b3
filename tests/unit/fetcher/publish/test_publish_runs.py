"""Finished fetches published in runs: full runs at once, the rest after the delay, all before a flush."""

from __future__ import annotations

import asyncio

import pytest

from libs.common.wire import messages as pb
from services.fetcher.fetch_core import FetchAttempt
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.publish.publish_runs import PUBLISH_FAILURES, PublishFailed, PublishRuns


def _fetch(n: int) -> tuple[pb.FetchRequest, FetchAttempt]:
    url = f"http://a.test/{n}"
    return pb.FetchRequest(url=url, request_id=str(n)), FetchAttempt(url, "ok", None, False, 0.0)


class Journal:
    def __init__(self, fail_on: frozenset[str] = frozenset()) -> None:
        self.published: list[str] = []
        self._fail_on = fail_on

    def __call__(self, request: pb.FetchRequest, attempt: FetchAttempt) -> None:
        if request.request_id in self._fail_on:
            raise RuntimeError(f"cannot publish {request.request_id}")
        self.published.append(request.request_id)


async def test_a_full_run_is_published_at_once_in_order() -> None:
    journal = Journal()
    runs = PublishRuns(journal, batch=3, delay=60.0)
    for n in range(2):
        runs.submit(*_fetch(n))
    assert journal.published == [] and runs.pending == 2
    runs.submit(*_fetch(2))
    assert journal.published == ["0", "1", "2"] and runs.pending == 0


async def test_a_run_that_does_not_fill_is_published_after_the_delay() -> None:
    journal = Journal()
    runs = PublishRuns(journal, batch=100, delay=0.05)
    runs.submit(*_fetch(0))
    await asyncio.sleep(0.01)
    runs.submit(*_fetch(1))
    assert journal.published == []
    await asyncio.sleep(0.1)  # the delay counts from the first fetch of the run
    assert journal.published == ["0", "1"]
    runs.submit(*_fetch(2))  # a new run, a new timer
    await asyncio.sleep(0.1)
    assert journal.published == ["0", "1", "2"]


async def test_the_flush_hook_publishes_what_waits() -> None:
    journal = Journal()
    runs = PublishRuns(journal, batch=100, delay=60.0)
    runs.submit(*_fetch(0))
    runs.before_flush()
    assert journal.published == ["0"] and runs.pending == 0


async def test_a_failure_is_counted_the_rest_published_and_the_next_flush_refused() -> None:
    journal = Journal(fail_on=frozenset({"1"}))
    runs = PublishRuns(journal, batch=3, delay=60.0)
    before = PUBLISH_FAILURES._value.get()
    for n in range(3):
        runs.submit(*_fetch(n))
    assert journal.published == ["0", "2"]
    assert PUBLISH_FAILURES._value.get() == before + 1
    with pytest.raises(PublishFailed, match="1 finished fetch"):
        runs.before_flush()
    runs.before_flush()  # reported once


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        PublishRuns(Journal(), batch=0, delay=0.1)
    with pytest.raises(ValueError):
        PublishRuns(Journal(), batch=4, delay=-1.0)


def _sized(n: int, size: int) -> tuple[pb.FetchRequest, FetchAttempt]:
    url = f"http://a.test/{n}"
    response = HttpResponse(url=url, final_url=url, status=200, body=b"x" * size)
    return pb.FetchRequest(url=url, request_id=str(n)), FetchAttempt(url, "ok", response, False, 0.0)


async def test_a_run_ends_once_its_bodies_reach_the_byte_limit() -> None:
    journal = Journal()
    runs = PublishRuns(journal, batch=100, delay=60.0, max_bytes=1000)
    runs.submit(*_sized(0, 600))
    assert journal.published == []
    runs.submit(*_sized(1, 600))  # 1,200 bytes wait: published, whatever the count
    assert journal.published == ["0", "1"] and runs.pending == 0
    runs.submit(*_sized(2, 10))
    assert runs.pending == 1  # the count of bytes started again
