"""Revisits on the real database: fetched pages come due again at the time their plan says, hubs by their
model, a burst brings a hub's next fetch forward, and the priority combines importance and freshness."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from services.scheduler.freshness.keys import Route
from services.scheduler.freshness.model import RateModel
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisit_hook import RevisitHook
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import Conn, GenerationStore, Hub, page_states
from services.scheduler.frontier.listeners import FetchedPage, RevisitPlan
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.frontier.store import NEVER, Dispatched, FrontierStore, NewUrl, Outcome, Priority

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(FETCH_REQUESTS.partitions))
T0 = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)  # a Tuesday morning
HUB = "http://news.test/news/"
RATE = 6.0  # items per hour, every hour of the week
SETTINGS = load_settings(FreshnessSettings, {}, first_interval=3600.0, min_interval=1.0, hub_interval=300.0)


class ManualClock:
    speed = 1.0

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@dataclass
class Frontier:
    store: FrontierStore
    clock: ManualClock
    db: Database
    registry: ModelRegistry
    generations: GenerationStore

    async def fetch(self, expected: int | None = None) -> list[Dispatched]:
        """Dispatches what is due and answers every request with a successful fetch."""
        sent = await self.store.dispatch(100, ALL)
        if expected is not None:
            assert len(sent) == expected, sent
        await self.store.apply_outcomes([ok(d, self.clock.now()) for d in sent], 3, 60.0)
        return sent

    async def row(self, url: str) -> tuple[str, datetime, float, float, float, int]:
        async with self.db.connection() as conn:
            cur = await conn.execute(
                "SELECT status, next_fetch_at, priority, change_probability, freshness_gain, attempts"
                " FROM scheduler.frontier WHERE url_fp = %s", (url_fingerprint(url),))
            found = await cur.fetchone()
            assert found is not None
            return found


def ok(sent: Dispatched, at: datetime) -> Outcome:
    return Outcome(sent.url_fp, sent.request_id, sent.host, "fetched", 200, "FETCH_STATUS_OK", "", at, None)


def new(url: str, found_on: str = "") -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1, "link", discovered_from=found_on)


@pytest.fixture
async def frontier(fresh_db: str) -> AsyncIterator[Frontier]:
    apply_migrations(fresh_db, "scheduler", Path("services/scheduler/migrations"))
    db = Database(DatabaseSettings(dsn=fresh_db), "freshness-test")
    await db.start()
    clock = ManualClock(T0)
    generations = GenerationStore(db)
    registry = ModelRegistry(generations, 60.0)
    hook = RevisitHook(registry, SETTINGS, clock, PriorityWeights())
    try:
        yield Frontier(FrontierStore(db, FETCH_REQUESTS.partitions, clock, hook), clock, db, registry, generations)
    finally:
        await db.stop()


async def with_hub_model(f: Frontier) -> float:
    """A generation in which news.test/news publishes RATE items an hour and HUB is its hub; its target."""
    model = RateModel(tuple([RATE] * 168), 4000, 720, 0.7, 0.7)
    generation = await f.generations.save(
        T0, (T0 - timedelta(days=30), T0), 20.0, 300.0, {"news.test/news": model},
        {"news.test/news": Route("news.test/news")}, {"news.test/news": 4000},
        [Hub(url_fingerprint(HUB), HUB, "news.test", "news.test/news", 400)], keep=3,
    )
    await f.registry.refresh()
    assert f.registry.current is not None and f.registry.current.generation == generation
    return 20.0


async def test_a_fetched_page_comes_due_again_at_its_planned_revisit(frontier: Frontier) -> None:
    f = frontier
    page = "http://plain.test/about.html"
    await f.store.add_urls([new(page)])
    await f.fetch(expected=1)
    status, due, _, _, _, _ = await f.row(page)
    assert status == "fetched" and due == T0 + timedelta(seconds=SETTINGS.first_interval)
    f.clock.advance(SETTINGS.first_interval - 1)
    assert await f.store.dispatch(10, ALL) == []
    f.clock.advance(2)
    again = await f.store.dispatch(10, ALL)
    assert [d.url for d in again] == [page] and again[0].attempts == 1  # attempts start over
    async with f.db.connection() as conn:
        state = (await page_states(conn, [url_fingerprint(page)], lock=False))[url_fingerprint(page)]
    assert state.policy == "page" and state.fetches == 1


async def test_without_a_planner_a_fetch_is_final(scheduler_db: Database) -> None:
    clock = ManualClock(T0)
    store = FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, clock)
    await store.add_urls([new("http://plain.test/")])
    sent = await store.dispatch(10, ALL)
    await store.apply_outcomes([ok(d, T0) for d in sent], 3, 60.0)
    clock.advance(10 * 365 * 86400.0)
    assert await store.dispatch(10, ALL) == []
    async with scheduler_db.connection() as conn:
        cur = await conn.execute("SELECT next_fetch_at FROM scheduler.frontier")
        assert await cur.fetchone() == (NEVER,)


async def test_revisits_keep_one_request_per_host(frontier: Frontier) -> None:
    f = frontier
    pages = ["http://plain.test/a.html", "http://plain.test/b.html", "http://other.test/c.html"]
    await f.store.add_urls([new(u) for u in pages])
    for _ in range(2):
        await f.fetch()
    f.clock.advance(SETTINGS.first_interval + 5)
    due = await f.store.dispatch(10, ALL)
    assert sorted(d.host for d in due) == ["other.test", "plain.test"]


async def test_a_hub_is_planned_by_its_model(frontier: Frontier) -> None:
    f = frontier
    target = await with_hub_model(f)
    await f.store.add_urls([new(HUB)])
    await f.store.set_priorities([Priority(url_fingerprint(HUB), HUB, "news.test", 0.25)])
    await f.fetch(expected=1)
    _, due, priority, probability, gain, _ = await f.row(HUB)
    interval = math.sqrt(2 * target / (RATE / 3600))  # the square-root rule at a constant rate
    assert (due - T0).total_seconds() == pytest.approx(interval, rel=1e-3)
    assert gain == pytest.approx(RATE / 3600 * interval, rel=1e-3)
    assert probability == pytest.approx(1 - math.exp(-gain))
    assert priority == pytest.approx(0.25 * probability + 1.0 * gain)  # importance x change + freshness gain
    await f.store.set_priorities([Priority(url_fingerprint(HUB), HUB, "news.test", 0.5)])
    assert (await f.row(HUB))[2] == pytest.approx(0.5 * probability + gain)
    async with f.db.connection() as conn:
        state = (await page_states(conn, [url_fingerprint(HUB)], lock=False))[url_fingerprint(HUB)]
    assert state.policy == "learned" and state.hub_key == "news.test/news"


async def test_a_burst_brings_the_hubs_next_fetch_forward(frontier: Frontier) -> None:
    f = frontier
    await with_hub_model(f)
    await f.store.add_urls([new(HUB)])
    await f.fetch(expected=1)
    calm = (await f.row(HUB))[1]
    f.clock.at = calm
    await f.fetch(expected=1)  # the re-fetch
    planned = (await f.row(HUB))[1]
    assert planned - calm == calm - T0
    # what the re-fetch revealed: a handful is as predicted, forty is a burst
    await f.store.add_urls([new(f"http://news.test/news/story-{i}.html", HUB) for i in range(2)])
    assert (await f.row(HUB))[1] == planned
    await f.store.add_urls([new(f"http://news.test/news/story-{i}.html", HUB) for i in range(2, 42)])
    burst = (await f.row(HUB))[1]
    assert burst < planned - (planned - calm) / 2
    async with f.db.connection() as conn:
        state = (await page_states(conn, [url_fingerprint(HUB)], lock=False))[url_fingerprint(HUB)]
    assert state.new_items == 42 and state.boost > 5 and state.reason and state.reason.startswith("burst")
    # children of a first fetch are not new items of a re-fetch
    await f.store.add_urls([new("http://news.test/other/x.html", "http://news.test/other/")])
    async with f.db.connection() as conn:
        assert await page_states(conn, [url_fingerprint("http://news.test/other/")], lock=False) == {}



class _Interleaved(RevisitHook):
    """Another transaction writes the pages' states between planning and applying the outcomes (with ``sql``)."""

    sql = ""

    async def plan_fetched(self, conn: Conn, pages: Sequence[FetchedPage]) -> dict[int, RevisitPlan]:
        plans = await super().plan_fetched(conn, pages)
        if self.sql:
            async with self.db.transaction() as other:
                await other.execute(self.sql, ([p.url_fp for p in pages],))
        return plans

    db: Database


@pytest.mark.parametrize(("first", "sql"), [
    (True, "INSERT INTO scheduler.freshness_pages (url_fp, url, host, fetches)"
           " SELECT fp, 'http://plain.test/about.html', 'plain.test', 10 FROM unnest(%s::bigint[]) AS t(fp)"),
    (False, "UPDATE scheduler.freshness_pages SET fetches = fetches + 10 WHERE url_fp = ANY(%s)"),
])
async def test_a_page_state_written_meanwhile_is_planned_again_from_it(fresh_db: str, first: bool, sql: str) -> None:
    apply_migrations(fresh_db, "scheduler", Path("services/scheduler/migrations"))
    db = Database(DatabaseSettings(dsn=fresh_db), "freshness-test")
    await db.start()
    try:
        clock = ManualClock(T0)
        hook = _Interleaved(ModelRegistry(GenerationStore(db), 60.0), SETTINGS, clock, PriorityWeights())
        hook.db = db
        f = Frontier(FrontierStore(db, FETCH_REQUESTS.partitions, clock, hook), clock, db, hook._registry,
                     GenerationStore(db))
        page = "http://plain.test/about.html"
        await f.store.add_urls([new(page)])
        if not first:  # a first fetch as usual: the page has a state to write to
            await f.fetch(expected=1)
            clock.advance(SETTINGS.first_interval)
        hook.sql = sql
        await f.fetch(expected=1)
        async with db.connection() as conn:
            state = (await page_states(conn, [url_fingerprint(page)], lock=False))[url_fingerprint(page)]
        # the other write kept, and this fetch counted on top of it
        assert state.fetches == (11 if first else 12) and state.url == page and state.last_fetch_at == clock.now()
        status, due, _, _, _, _ = await f.row(page)
        assert status == "fetched" and due == state.planned_at
        assert due == clock.now() + timedelta(seconds=SETTINGS.first_interval)
    finally:
        await db.stop()
