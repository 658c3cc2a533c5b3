"""A page's validators on the real database: kept from its capture, carried by its revisit, kept by a 304,
replaced by a new capture; and a 304 is, for the revisit planner, a visit that saw no change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisit_hook import RevisitHook
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import GenerationStore, page_states
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.frontier.store import Dispatched, FrontierStore, NewUrl, Outcome
from services.scheduler.handlers import frontier_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(FETCH_REQUESTS.partitions))
T0 = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)
PAGE = "http://plain.test/about.html"
LAST_MODIFIED = "Mon, 02 Mar 2026 10:00:00 GMT"
SETTINGS = load_settings(FreshnessSettings, {}, first_interval=3600.0, min_interval=1.0)


class ManualClock:
    speed = 1.0

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def answer(sent: Dispatched, status: pb.FetchStatus.ValueType, at: datetime, etag: str = "",
           last_modified: str = "") -> Outcome:
    """The outcome the scheduler's handler derives from a fetcher's FetchOutcome."""
    msg = pb.FetchOutcome(request_id=sent.request_id, url=sent.url, status=status)
    return Outcome(sent.url_fp, sent.request_id, sent.host, frontier_status(msg),
                   304 if status == pb.FETCH_STATUS_NOT_MODIFIED else 200, pb.FetchStatus.Name(status), "", at, None,
                   etag, last_modified)


@pytest.fixture
async def stack(fresh_db: str) -> AsyncIterator[tuple[FrontierStore, ManualClock, Database]]:
    apply_migrations(fresh_db, "scheduler", Path("services/scheduler/migrations"))
    apply_migrations(fresh_db, "linkbase", Path("services/linkbase/migrations"))  # the page versions read
    db = Database(DatabaseSettings(dsn=fresh_db), "revisit-validators-test")
    await db.start()
    clock = ManualClock(T0)
    hook = RevisitHook(ModelRegistry(GenerationStore(db), 60.0), SETTINGS, clock, PriorityWeights())
    try:
        yield FrontierStore(db, FETCH_REQUESTS.partitions, clock, hook), clock, db
    finally:
        await db.stop()


async def frontier_row(db: Database) -> dict[str, Any]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT * FROM scheduler.frontier WHERE url_fp = %s", (url_fingerprint(PAGE),))
        found = await cur.fetchone()
        assert found is not None and cur.description is not None
        return {col.name: value for col, value in zip(cur.description, found, strict=True)}


async def version(db: Database, at: datetime, content_fp: str) -> None:
    """A content version of PAGE in the linkbase, as the extractor's document leaves it."""
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (7, %s, %s)"
                           " ON CONFLICT DO NOTHING", (url_host(PAGE), url_host(PAGE)))
        await conn.execute("INSERT INTO linkbase.page_versions (host_id, url_fp, fetched_at, content_fp)"
                           " VALUES (7, %s, %s, %s)", (url_fingerprint(PAGE), at, content_fp))


async def revisit(store: FrontierStore, clock: ManualClock) -> Dispatched:
    clock.advance(SETTINGS.first_interval + 1)
    [sent] = await store.dispatch(10, ALL)
    return sent


async def test_validators_go_from_a_capture_to_its_revisit_and_a_304_keeps_them(stack) -> None:
    store, clock, db = stack
    await store.add_urls([NewUrl(url_fingerprint(PAGE), PAGE, url_host(PAGE), 0, "seed")])
    [first] = await store.dispatch(10, ALL)
    assert (first.etag, first.last_modified, first.validated_at) == (None, None, None)  # a first fetch: unconditional
    await store.apply_outcomes([answer(first, pb.FETCH_STATUS_OK, T0, '"v1"', LAST_MODIFIED)], 3, 60.0)
    row = await frontier_row(db)
    assert (row["etag"], row["last_modified"], row["validated_at"]) == ('"v1"', LAST_MODIFIED, T0)

    sent = await revisit(store, clock)
    assert (sent.etag, sent.last_modified, sent.validated_at) == ('"v1"', LAST_MODIFIED, T0)
    await store.apply_outcomes([answer(sent, pb.FETCH_STATUS_NOT_MODIFIED, clock.now())], 3, 60.0)
    row = await frontier_row(db)
    assert row["status"] == "fetched" and row["last_outcome"] == "FETCH_STATUS_NOT_MODIFIED"
    assert (row["etag"], row["last_modified"], row["validated_at"]) == ('"v1"', LAST_MODIFIED, T0)

    sent = await revisit(store, clock)
    await store.apply_outcomes([answer(sent, pb.FETCH_STATUS_NOT_MODIFIED, clock.now(), '"v1b"')], 3, 60.0)
    assert (await frontier_row(db))["etag"] == '"v1b"'  # a 304 may send newer validators

    sent = await revisit(store, clock)
    changed_at = clock.now()
    await store.apply_outcomes([answer(sent, pb.FETCH_STATUS_OK, changed_at, '"v2"')], 3, 60.0)
    row = await frontier_row(db)
    assert (row["etag"], row["last_modified"], row["validated_at"]) == ('"v2"', None, changed_at)

    sent = await revisit(store, clock)
    error = Outcome(sent.url_fp, sent.request_id, sent.host, "retry", 503, "FETCH_STATUS_HTTP_ERROR", "status 503",
                    clock.now(), None)
    await store.apply_outcomes([error], 3, 60.0)
    assert (await frontier_row(db))["etag"] == '"v2"'  # an error says nothing of the page's validators

    clock.advance(61)  # the retry's backoff
    [sent] = await store.dispatch(10, ALL)
    assert sent.etag == '"v2"'
    await store.apply_outcomes([answer(sent, pb.FETCH_STATUS_OK, clock.now())], 3, 60.0)
    row = await frontier_row(db)
    assert (row["etag"], row["last_modified"], row["validated_at"]) == (None, None, None)  # the new capture has none


async def test_a_304_is_a_visit_that_saw_no_change(stack) -> None:
    store, clock, db = stack
    await store.add_urls([NewUrl(url_fingerprint(PAGE), PAGE, url_host(PAGE), 0, "seed")])
    [first] = await store.dispatch(10, ALL)
    await store.apply_outcomes([answer(first, pb.FETCH_STATUS_OK, T0, '"v1"')], 3, 60.0)
    await version(db, T0, "content-1")  # the first capture's document reached the linkbase
    sent = await revisit(store, clock)
    await store.apply_outcomes([answer(sent, pb.FETCH_STATUS_NOT_MODIFIED, clock.now())], 3, 60.0)
    async with db.connection() as conn:
        state = (await page_states(conn, [url_fingerprint(PAGE)], lock=False))[url_fingerprint(PAGE)]
    assert (state.visits, state.changes) == (1, 0)
    assert state.reason == "no change seen: maximum interval"
    row = await frontier_row(db)
    assert row["next_fetch_at"] == clock.now() + timedelta(seconds=SETTINGS.page_bounds.max_interval)
