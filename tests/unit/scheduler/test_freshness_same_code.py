"""The service's trainer and the offline evaluator plan with the same code: same models, routes and target.

Both call ``fitting.fit_models`` and ``calibration.calibrated_target``; on the same items they must
reach the same generation, so what ``trawl eval freshness`` measures is what the scheduler runs.
"""

from __future__ import annotations

import random

import pytest

from libs.common.settings import load_settings
from services.scheduler.freshness import calibration, evaluation, fitting, trainer
from services.scheduler.freshness.evaluation import EvaluationSettings, split, train, waiting_target
from services.scheduler.freshness.history import Sighting
from services.scheduler.freshness.replay import History
from services.scheduler.freshness.settings import FreshnessSettings

T0 = 1772409600.0  # 2026-03-02T00:00:00Z, a Monday
DAYS = 21
SETTINGS = load_settings(FreshnessSettings, {}, min_samples=200, hub_min_items=10, trees=20, window_days=DAYS)


def sightings(host: str, per_hour: float, seed: int, days: int) -> list[Sighting]:
    rng = random.Random(seed)
    out = []
    for hour in range(days * 24):
        busy = 9 <= hour % 24 < 18 and (hour // 24) % 7 < 5
        for n in range(int(rng.expovariate(1.0) * (per_hour if busy else per_hour / 10))):
            out.append(Sighting(f"http://{host}/news/{hour}-{n}.html", f"http://{host}/news/",
                                published_at=T0 + hour * 3600 + rng.uniform(1, 3599)))
    return out


def test_both_sides_call_the_same_functions() -> None:
    assert trainer.fit_models is evaluation.fit_models is fitting.fit_models
    assert trainer.calibrated_target is evaluation.calibrated_target is calibration.calibrated_target


def test_the_trainer_and_the_evaluator_reach_the_same_generation() -> None:
    seen = sightings("a.test", 6, 1, DAYS + 2) + sightings("b.test", 3, 2, DAYS + 2)
    until = T0 + DAYS * 86400 + 3600  # the trainer learns from whole hours up to an hour before
    training = trainer.train_generation([s for s in seen if (s.published_at or 0) <= until], T0, until, SETTINGS)

    history: dict[str, list[float]] = {}
    for s in seen:
        history.setdefault(f"{s.child_url.split('/')[2]}/news", []).append(s.published_at or 0.0)
    history = {k: sorted(v) for k, v in history.items()}
    settings = EvaluationSettings(train_days=DAYS, min_samples=SETTINGS.min_samples, hub_interval=SETTINGS.hub_interval,
                                  bounds=SETTINGS.bounds, first_interval=SETTINGS.hub_interval,
                                  bursts=SETTINGS.bursts, forest=SETTINGS.forest, min_skill=SETTINGS.min_skill,
                                  calibration_days=SETTINGS.calibration_days)
    window = split(history, DAYS)
    trained = train(history, window, settings)
    assert trained.routes == training.routes
    assert trained.models == training.models
    histories = {key: History(times, window.train_start) for key, times in history.items()}
    target = waiting_target(history, window, trained, "learned", settings.hub_interval, settings, histories)
    assert target == pytest.approx(training.waiting_target, rel=1e-9)
