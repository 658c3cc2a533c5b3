"""The per-key random forest: features, its compiled 168 answers, the floor, and R2 as seed 001 reports it."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor

from services.scheduler.freshness.model import (
    ForestSettings,
    hour_rows,
    hourly_counts,
    one_hot,
    r2_on_period,
    train_rate_model,
    window_hours,
)
from services.scheduler.freshness.rates import HOUR, HOURS_PER_WEEK

MONDAY = 1772409600.0  # 2026-03-02T00:00:00Z
DAYS = 30


def poisson_history(seed: int, days: int, per_hour: list[float]) -> list[float]:
    rng = np.random.default_rng(seed)
    times: list[float] = []
    for h in range(days * 24):
        n = rng.poisson(per_hour[h % HOURS_PER_WEEK])
        times.extend(MONDAY + h * HOUR + rng.uniform(0, HOUR, n))
    return sorted(times)


OFFICE = [12.0 if (i // 24) < 5 and 9 <= i % 24 < 18 else 0.3 for i in range(HOURS_PER_WEEK)]


def test_features_are_hour_and_weekday_one_hot() -> None:
    row = one_hot(2 * 24 + 9)  # Wednesday 09:00
    assert row.shape == (31,)
    assert list(np.flatnonzero(row)) == [9, 24 + 2]
    rows = hour_rows(MONDAY + 23 * HOUR, 2)
    assert list(np.flatnonzero(rows[0])) == [23, 24] and list(np.flatnonzero(rows[1])) == [0, 25]


def test_hourly_counts_and_window() -> None:
    counts = hourly_counts([MONDAY + 10, MONDAY + 20, MONDAY + HOUR + 1, MONDAY - 5, MONDAY + 5 * HOUR], MONDAY, 3)
    assert list(counts) == [2.0, 1.0, 0.0]
    assert window_hours(MONDAY + 10, MONDAY + 10 * HOUR) == (MONDAY + HOUR, 9)


def test_the_compiled_model_answers_as_the_forest_does() -> None:
    settings = ForestSettings(trees=30, rate_floor=0.0)
    times = poisson_history(1, DAYS, OFFICE)
    model = train_rate_model(times, MONDAY, MONDAY + DAYS * 86400, settings)
    forest = RandomForestRegressor(n_estimators=30, min_samples_leaf=settings.min_samples_leaf,
                                   max_features=settings.max_features, random_state=0, n_jobs=1)
    first, hours = window_hours(MONDAY, MONDAY + DAYS * 86400)
    forest.fit(hour_rows(first, hours), hourly_counts(times, first, hours))
    week = forest.predict(hour_rows(MONDAY, HOURS_PER_WEEK))
    assert np.allclose(model.rates_per_hour, np.maximum(week, 0.0))
    assert model.samples == len(times) and model.hours == DAYS * 24


def test_model_learns_the_rhythm_with_r2_in_the_papers_range() -> None:
    times = poisson_history(2, DAYS, OFFICE)
    model = train_rate_model(times, MONDAY, MONDAY + DAYS * 86400, ForestSettings())
    rates = np.array(model.rates_per_hour)
    busy = [i for i in range(HOURS_PER_WEEK) if OFFICE[i] > 1]
    quiet = [i for i in range(HOURS_PER_WEEK) if OFFICE[i] < 1]
    assert rates[busy].mean() == pytest.approx(12.0, rel=0.1)
    assert rates[quiet].mean() < 1.0
    assert 0.6 <= model.r2_cv <= 0.95 and 0.6 <= model.r2_holdout <= 0.95
    later = poisson_history(3, 7, OFFICE)
    assert 0.6 <= r2_on_period(model, later, MONDAY, MONDAY + 7 * 86400) <= 0.95


def test_no_hour_is_predicted_empty() -> None:
    per_hour = [10.0 if 9 <= i % 24 < 17 else 0.0 for i in range(HOURS_PER_WEEK)]
    times = poisson_history(4, DAYS, per_hour)
    model = train_rate_model(times, MONDAY, MONDAY + DAYS * 86400, ForestSettings(rate_floor=0.05))
    mean = len(times) / (DAYS * 24)
    assert min(model.rates_per_hour) == pytest.approx(0.05 * np.mean(
        np.maximum(model.rates_per_hour, 0)), rel=0.2)
    assert min(model.rates_per_hour) > 0.03 * mean


def test_a_window_too_short_is_refused() -> None:
    with pytest.raises(ValueError):
        train_rate_model([MONDAY], MONDAY, MONDAY + 5 * HOUR, ForestSettings())


def test_a_young_key_is_trained_from_the_hour_of_its_first_item() -> None:
    from services.scheduler.freshness.model import observed_from

    assert observed_from([MONDAY + 3 * 86400 + 5.5 * HOUR], MONDAY) == MONDAY + 3 * 86400 + 5 * HOUR
    assert observed_from([MONDAY - HOUR], MONDAY) == MONDAY
    assert observed_from([], MONDAY) == MONDAY
