"""Trains a model generation on a schedule, from the linkbase's appearance history.

Every ``retrain_interval`` (scheduler time) one replica claims the run (``GenerationStore.
claim_training``) and:

1. reads the sightings of the last ``window_days`` and applies the appearance rule;
2. routes keys (own model, host's model, none) by their item counts, and trains a forest per
   model key, off the event loop;
3. finds the hubs: pages that revealed at least ``hub_min_items`` items in the window; a hub's
   key is the key most of its items have;
4. sets the waiting target from the fetch budget (``hub_interval`` per hub) over the hubs'
   curves (a hub without a model counts with its mean item rate);
5. writes the generation and its hubs, makes it current, and re-plans the hubs already
   fetched with it (so a page just found to be a hub does not wait for its old plan).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from libs.common import metrics
from libs.common.db.pool import Database
from libs.common.urls import InvalidUrl, normalize_url, url_fingerprint, url_host
from services.scheduler.clock import SchedulerClock
from services.scheduler.freshness.history import Appearance, Sighting, SightingReader, appearances, times_by_key
from services.scheduler.freshness.keys import Route, route_keys
from services.scheduler.freshness.model import RateModel, observed_from, train_rate_model
from services.scheduler.freshness.policy import budget_target
from services.scheduler.freshness.rates import HOUR, ConstantRate
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisit_hook import RevisitHook
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import Generation, GenerationStore, Hub

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Training:
    """What one run produced, before it is written."""

    models: dict[str, RateModel]
    routes: dict[str, Route]
    samples: dict[str, int]
    hubs: list[Hub]
    waiting_target: float
    items: int


def find_hubs(items: Sequence[Appearance], min_items: int) -> list[Hub]:
    """Pages that revealed at least ``min_items`` of the items, each with its items' commonest key."""
    keys: dict[str, Counter[str]] = {}
    for item in items:
        if item.parent_url:
            keys.setdefault(item.parent_url, Counter())[item.key] += 1
    hubs = []
    for parent, counts in sorted(keys.items()):
        total = sum(counts.values())
        if total < min_items:
            continue
        try:
            url = normalize_url(parent)
        except InvalidUrl:
            continue
        hubs.append(Hub(url_fingerprint(url), url, url_host(url), counts.most_common(1)[0][0], total))
    return hubs


def train_generation(sightings: Sequence[Sighting], since: float, until: float,
                     settings: FreshnessSettings) -> Training:
    """Models, routes, hubs and waiting target from the sightings of ``[since, until]`` (CPU-bound).

    The models learn from whole hours up to an hour before ``until``: the items of the last
    hour are still being found (a hub is fetched every few minutes, its items after it), and an
    hour that looks empty only because of that would teach the model a quiet hour.
    """
    items = appearances(sightings, since, until)
    learn_until = math.floor(until / HOUR) * HOUR - HOUR
    by_key = times_by_key(i for i in items if i.at < learn_until)
    samples = {key: len(times) for key, times in by_key.items()}
    routes = route_keys(samples, settings.min_samples)
    folded: dict[str, list[float]] = {}
    for key, routed in routes.items():
        folded.setdefault(routed.model_key, []).extend(by_key[key])
    models: dict[str, RateModel] = {}
    for model_key, times in sorted(folded.items()):
        try:
            models[model_key] = train_rate_model(sorted(times), observed_from(times, since), learn_until,
                                                 settings.forest)
        except ValueError as exc:
            log.warning("no model for %s: %s", model_key, exc)
    routes = {k: r for k, r in routes.items() if r.model_key in models}
    hubs = find_hubs(items, settings.hub_min_items)
    integrals = []
    for hub in hubs:
        route = routes.get(hub.key)
        if route is not None:
            integrals.append(models[route.model_key].curve(route.share).weekly_sqrt_integral())
        else:
            integrals.append(ConstantRate(hub.items / max(1.0, until - since)).weekly_sqrt_integral())
    target = budget_target(integrals, settings.hub_interval) if integrals else math.inf  # no hubs: no budget
    return Training(models, routes, samples, hubs, target, len(items))


class FreshnessTrainer:
    def __init__(self, db: Database, generations: GenerationStore, reader: SightingReader, registry: ModelRegistry,
                 hook: RevisitHook, settings: FreshnessSettings, clock: SchedulerClock) -> None:
        self._db = db
        self._generations = generations
        self._reader = reader
        self._registry = registry
        self._hook = hook
        self._settings = settings
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name="freshness-trainer")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        pause = max(0.5, self._settings.retrain_interval / self._clock.speed)
        while not self._stopping.is_set():
            now = self._clock.now()
            try:
                if await self._generations.claim_training(now, self._settings.retrain_interval):
                    await self.train_once(now)
            except Exception:
                metrics.FRESHNESS_ERRORS.labels("training").inc()
                log.exception("freshness training failed; the current models stay in use")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=pause)

    async def train_once(self, now: datetime) -> Generation | None:
        """Trains, writes and uses a generation on the history up to ``now``; None when there is no history."""
        began = time.perf_counter()
        since = now - timedelta(days=self._settings.window_days)
        sightings = await self._reader.sightings(since.timestamp(), now.timestamp())
        training = await asyncio.to_thread(train_generation, sightings, since.timestamp(), now.timestamp(),
                                           self._settings)
        if training.items == 0:
            log.info("no appearance history in the last %s days: no models yet", self._settings.window_days)
            return None
        number = await self._generations.save(
            now, (since, now), training.waiting_target, self._settings.hub_interval, training.models,
            training.routes, training.samples, training.hubs, self._settings.keep_generations,
        )
        generation = Generation(number, now, since, now, training.waiting_target, self._settings.hub_interval,
                                training.models, training.routes, training.samples)
        self._registry.use(generation)
        async with self._db.transaction() as conn:
            replanned = await self._hook.replan_hubs(conn)
        log.info("freshness generation %s: %s items, %s models, %s hubs (%s re-planned), target %.3g item-s,"
                 " %.1f s", number, training.items, len(training.models), len(training.hubs), replanned,
                 training.waiting_target, time.perf_counter() - began)
        return generation
