"""The freshness trainer on the real database: the linkbase's history in, a generation of models and hubs
out, used by every replica, and hubs re-planned with it."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint
from services.linkbase.rows import host_id
from services.scheduler.freshness.linkbase_reader import LinkbaseSightings
from services.scheduler.freshness.rates import hour_of_week
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisit_hook import RevisitHook
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import GenerationStore, page_states
from services.scheduler.freshness.trainer import FreshnessTrainer
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.frontier.store import FrontierStore, NewUrl, Outcome
from tests.integration.scheduler.test_freshness_revisits import ManualClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NOW = datetime(2026, 3, 24, 6, 0, tzinfo=UTC)  # a Tuesday, early
HUB = "http://news.test/news/"
SETTINGS = load_settings(FreshnessSettings, {}, min_samples=300, hub_min_items=10, first_interval=86400.0,
                         trees=30, retrain_interval=3600.0)


@dataclass
class Setup:
    db: Database
    clock: ManualClock
    trainer: FreshnessTrainer
    registry: ModelRegistry
    generations: GenerationStore
    frontier: FrontierStore


def office_hours_history(days: int, seed: int = 3) -> list[datetime]:
    """Items on weekdays from 09:00 to 17:00 UTC, about 8 an hour."""
    rng = random.Random(seed)
    out: list[datetime] = []
    start = NOW - timedelta(days=days)
    for hour in range(days * 24):
        at = start + timedelta(hours=hour)
        if at.weekday() < 5 and 9 <= at.hour < 17:
            out.extend(at + timedelta(seconds=rng.uniform(0, 3600)) for _ in range(rng.randint(5, 11)))
    return out


async def fill_linkbase(db: Database, published: list[datetime], revealed: list[tuple[datetime, datetime]]) -> None:
    """The hub, its children with publish dates, and children a re-fetch revealed without one."""
    hid = host_id("news.test")
    hub_fp = url_fingerprint(HUB)
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, %s, %s)",
                           (hid, "news.test", "news.test"))
        await conn.execute("INSERT INTO linkbase.urls (host_id, url_fp, url, fetched) VALUES (%s, %s, %s, true)",
                           (hid, hub_fp, HUB))
        rows = [(hid, url_fingerprint(u), u, hid, hub_fp, at) for u, at in
                ((f"http://news.test/news/story-{i}.html", at) for i, at in enumerate(published))]
        await conn.cursor().executemany(
            "INSERT INTO linkbase.urls (host_id, url_fp, url, discovered_from_host_id, discovered_from_fp,"
            " published_at) VALUES (%s, %s, %s, %s, %s, %s)", rows)
        for i, (last, now) in enumerate(revealed):
            child = f"http://news.test/news/brief-{i}.html"
            await conn.execute("INSERT INTO linkbase.urls (host_id, url_fp, url) VALUES (%s, %s, %s)",
                               (hid, url_fingerprint(child), child))
            await conn.execute(
                "INSERT INTO linkbase.publish_history (hub_host_id, hub_fp, fetched_at, child_fp, child_host_id,"
                " previous_fetch_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (hid, hub_fp, now, url_fingerprint(child), hid, last))
        # a page with an old date, and one without any: no items of the window
        await conn.execute("INSERT INTO linkbase.urls (host_id, url_fp, url, published_at) VALUES (%s, %s, %s, %s)",
                           (hid, url_fingerprint("http://news.test/old.html"), "http://news.test/old.html",
                            NOW - timedelta(days=400)))


@pytest.fixture
async def setup(fresh_db: str) -> AsyncIterator[Setup]:
    apply_migrations(fresh_db, "scheduler", Path("services/scheduler/migrations"))
    apply_migrations(fresh_db, "linkbase", Path("services/linkbase/migrations"))
    db = Database(DatabaseSettings(dsn=fresh_db), "freshness-trainer-test")
    await db.start()
    clock = ManualClock(NOW)
    generations = GenerationStore(db)
    registry = ModelRegistry(generations, 60.0)
    hook = RevisitHook(registry, SETTINGS, clock, PriorityWeights())
    trainer = FreshnessTrainer(db, generations, LinkbaseSightings(db), registry, hook, SETTINGS, clock)
    try:
        yield Setup(db, clock, trainer, registry, generations, FrontierStore(db, FETCH_REQUESTS.partitions, clock,
                                                                             hook))
    finally:
        await db.stop()


async def test_the_reader_takes_publish_dates_and_the_revealed_children(setup: Setup) -> None:
    revealed = [(NOW - timedelta(hours=5), NOW - timedelta(hours=4, minutes=40))]
    await fill_linkbase(setup.db, office_hours_history(3), revealed)
    sightings = await LinkbaseSightings(setup.db).sightings((NOW - timedelta(days=30)).timestamp(), NOW.timestamp())
    briefs = [s for s in sightings if "brief" in s.child_url]
    assert len(briefs) == 1 and briefs[0].parent_url == HUB and briefs[0].published_at is None
    assert briefs[0].previous_fetch_at == revealed[0][0].timestamp()
    stories = [s for s in sightings if "story" in s.child_url]
    assert stories and all(s.parent_url == HUB and s.published_at for s in stories)
    assert not any("old.html" in s.child_url for s in sightings)


async def test_without_a_linkbase_there_is_no_history(scheduler_db: Database) -> None:
    assert await LinkbaseSightings(scheduler_db).sightings(0.0, NOW.timestamp()) == []


async def test_training_makes_a_generation_every_replica_uses_and_replans_the_hub(setup: Setup) -> None:
    s = setup
    await fill_linkbase(s.db, office_hours_history(21), [])
    # the hub was fetched once before it was known to be one: planned as a page, a day later
    await s.frontier.add_urls([NewUrl(url_fingerprint(HUB), HUB, "news.test", 1)])
    sent = await s.frontier.dispatch(10, list(range(FETCH_REQUESTS.partitions)))
    fetched_at = NOW - timedelta(hours=1)
    s.clock.at = fetched_at
    await s.frontier.apply_outcomes(
        [Outcome(d.url_fp, d.request_id, d.host, "fetched", 200, "FETCH_STATUS_OK", "", fetched_at, None)
         for d in sent], 3, 60.0)
    s.clock.at = NOW

    generation = await s.trainer.train_once(NOW)
    assert generation is not None and s.registry.current == generation
    assert set(generation.models) == {"news.test/news"}
    model = generation.models["news.test/news"]
    busy = model.rates_per_hour[hour_of_week(datetime(2026, 3, 24, 11, tzinfo=UTC).timestamp())]
    night = model.rates_per_hour[hour_of_week(datetime(2026, 3, 24, 2, tzinfo=UTC).timestamp())]
    assert busy > 5 and night < 1 and 0.5 < model.r2_cv <= 1.0
    assert generation.waiting_target > 0

    other_replica = ModelRegistry(GenerationStore(s.db), 60.0)
    await other_replica.refresh()
    assert other_replica.current is not None and other_replica.current.generation == generation.generation
    assert other_replica.current.models["news.test/news"].rates_per_hour == pytest.approx(model.rates_per_hour)

    async with s.db.connection() as conn:
        state = (await page_states(conn, [url_fingerprint(HUB)], lock=False))[url_fingerprint(HUB)]
        cur = await conn.execute("SELECT next_fetch_at FROM scheduler.frontier WHERE url_fp = %s",
                                 (url_fingerprint(HUB),))
        row = await cur.fetchone()
    assert state.hub_key == "news.test/news" and state.hub_items > 300 and state.policy == "learned"
    assert row is not None
    # 06:00 on a Tuesday is quiet: the plan waits for the morning, far sooner than the page's day
    assert fetched_at < row[0] < fetched_at + timedelta(hours=6)


async def test_one_replica_trains_per_interval(setup: Setup) -> None:
    assert await setup.generations.claim_training(NOW, 3600.0)
    assert not await setup.generations.claim_training(NOW + timedelta(minutes=30), 3600.0)
    assert await setup.generations.claim_training(NOW + timedelta(minutes=61), 3600.0)


async def test_no_history_keeps_the_current_models(setup: Setup) -> None:
    assert await setup.trainer.train_once(NOW) is None
    assert setup.registry.current is None and await setup.generations.current_id() is None


async def test_generations_are_pruned(setup: Setup) -> None:
    await fill_linkbase(setup.db, office_hours_history(10), [])
    numbers = []
    for _ in range(SETTINGS.keep_generations + 2):
        generation = await setup.trainer.train_once(NOW)
        assert generation is not None
        numbers.append(generation.generation)
    async with setup.db.connection() as conn:
        cur = await conn.execute("SELECT generation FROM scheduler.freshness_generations ORDER BY 1")
        kept = [r[0] for r in await cur.fetchall()]
    assert kept == numbers[-SETTINGS.keep_generations:]
    assert await setup.generations.current_id() == numbers[-1]
