"""The freshness parts of the scheduler service, built from settings: registry, revisit hook, trainer."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.db.pool import Database
from services.scheduler.clock import SchedulerClock
from services.scheduler.freshness.explain import FreshnessExplainer
from services.scheduler.freshness.linkbase_reader import LinkbaseSightings
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisit_hook import RevisitHook
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import GenerationStore
from services.scheduler.freshness.trainer import FreshnessTrainer
from services.scheduler.frontier.priority import PriorityWeights


@dataclass(frozen=True)
class Freshness:
    """``registry`` and ``trainer`` are long-lived (start after the database, stop before it)."""

    registry: ModelRegistry
    hook: RevisitHook
    trainer: FreshnessTrainer
    explainer: FreshnessExplainer


def build_freshness(db: Database, settings: FreshnessSettings, weights: PriorityWeights,
                    clock: SchedulerClock) -> Freshness:
    generations = GenerationStore(db)
    registry = ModelRegistry(generations, settings.poll_seconds)
    hook = RevisitHook(registry, settings, clock, weights)
    trainer = FreshnessTrainer(db, generations, LinkbaseSightings(db), registry, hook, settings, clock)
    explainer = FreshnessExplainer(db, registry, clock, weights, settings.burst_half_life)
    return Freshness(registry, hook, trainer, explainer)
