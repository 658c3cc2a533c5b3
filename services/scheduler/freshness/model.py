"""The model per key (seed 001): random-forest regression of new items per hour.

One row per hour of the training window: features ``h0..h23`` (hour of day, one-hot) and
``w0..w6`` (weekday, one-hot, Monday first; UTC), target the number of items that appeared
in that hour. 30 days make 720 rows.

With one-hot hour and weekday as its only inputs, the forest can only ever be asked 168
different questions, so it is compiled into its 168 answers (:class:`RateModel`): the same
predictions, stored as a row of numbers that every scheduler replica loads, that an
operator can read, and that needs no pickled estimator. Quality is reported as seed 001
does: R2 under random 5-fold cross-validation, and R2 on the last part of the window held
out in time order (the model refitted on the first part).

An hour the forest predicts (almost) nothing for is not trusted to be empty: four weeks
give each hour of the week four samples, and a rate of zero would leave an item that does
appear there waiting until the maximum interval. Predictions are floored at ``rate_floor``
times the key's mean rate.

Which curve, and how far it is trusted, is itself cross-validated. Hourly counts of a sparse key are
mostly noise (two items a day give an R2 near 0 even for a perfect rate curve), and a forest
with small leaves learns some of that noise. Two curves are fitted on the same folds: the
forest, and a separable one (a rate per hour of the day times a factor per weekday, a Poisson
model fitted by iterative proportional fitting: 31 numbers instead of 168, so a sparse key's
daily rhythm is learnt from all its days at once). The compiled rates are the blend
``w * curve + (1 - w) * mean`` of the curve and weight ``w`` (of 0, 0.1, ..., 1) whose
out-of-fold predictions have the lowest Poisson deviance on the training hours; ``skill`` is
the deviance the blend saves against the mean rate alone (0: the model knows nothing the
mean does not, and the key is planned on its mean rate, as the model-free estimator would).

A source whose clock moves (a newsroom starting daylight saving time) publishes an hour earlier
or later in UTC from one day on, and a model of mostly older weeks is an hour off: if the last
three days' counts are explained better by the rates moved one hour
(:func:`follow_clock_change`), they are moved.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold

from services.scheduler.freshness.rates import HOUR, HOURS_PER_WEEK, HourlyRates, hour_of_week

FEATURES = 31


@dataclass(frozen=True)
class ForestSettings:
    trees: int = 100
    min_samples_leaf: int = 2
    max_features: float = 0.5
    seed: int = 0
    rate_floor: float = 0.05
    holdout_fraction: float = 0.2
    folds: int = 5
    blend_steps: int = 10  # the forest's weight is chosen among 0, 1/steps, ..., 1 (0: always the forest)
    clock_days: float = 3.0  # the last days checked for a clock change (0: never)
    clock_evidence: float = 10.0  # deviance an hour's shift must save on them to be followed


@dataclass(frozen=True)
class RateModel:
    """A trained key's predictions: new items per hour for each hour of the week, and its quality."""

    rates_per_hour: tuple[float, ...]
    samples: int
    hours: int
    r2_cv: float
    r2_holdout: float
    blend: float = 1.0  # the curve's weight in the rates, against the mean rate
    skill: float = 0.0  # Poisson deviance saved against the mean rate, out of fold (0..1)
    form: str = "forest"  # which curve: "forest" or "separable" (hour of day times weekday)

    def curve(self, share: float = 1.0) -> HourlyRates:
        return HourlyRates(self.rates_per_hour, share)


def one_hot(hour_index: int) -> NDArray[np.float64]:
    """The features of one hour of the week (``weekday * 24 + hour``)."""
    row = np.zeros(FEATURES)
    row[hour_index % 24] = 1.0
    row[24 + hour_index // 24] = 1.0
    return row


WEEK_FEATURES: NDArray[np.float64] = np.array([one_hot(i) for i in range(HOURS_PER_WEEK)])


def hourly_counts(times: Sequence[float], start: float, hours: int) -> NDArray[np.float64]:
    """Items per hour over ``hours`` hours from ``start`` (an hour boundary)."""
    stamps = np.asarray(times, dtype=float)
    index = np.floor((stamps - start) / HOUR).astype(int)
    index = index[(index >= 0) & (index < hours)]
    return np.bincount(index, minlength=hours).astype(float)


def hour_rows(start: float, hours: int) -> NDArray[np.float64]:
    """The features of ``hours`` consecutive hours from ``start``."""
    first = hour_of_week(start)
    return WEEK_FEATURES[(first + np.arange(hours)) % HOURS_PER_WEEK]


def window_hours(start: float, end: float) -> tuple[float, int]:
    """The whole hours of ``[start, end)``: first hour boundary at or after ``start``, and their number."""
    first = math.ceil(start / HOUR) * HOUR
    return first, max(0, int((end - first) // HOUR))


def observed_from(times: Sequence[float], since: float) -> float:
    """Where a key's training window starts: at ``since``, or at the hour of its first item if later.

    A key first seen a week ago has a week of history, not three weeks of silence before it:
    hours before the first item anyone saw of a key are unknown, not quiet.
    """
    if not times:
        return since
    return max(since, math.floor(min(times) / HOUR) * HOUR)


def _forest(settings: ForestSettings) -> RandomForestRegressor:
    return RandomForestRegressor(
        n_estimators=settings.trees, min_samples_leaf=settings.min_samples_leaf, max_features=settings.max_features,
        random_state=settings.seed, n_jobs=1,
    )


def r2(actual: NDArray[np.float64], predicted: NDArray[np.float64]) -> float:
    """R2, or 0 when the actual series is constant (nothing to explain)."""
    if len(actual) < 2 or float(np.var(actual)) == 0.0:
        return 0.0
    return float(r2_score(actual, predicted))


def poisson_deviance(actual: NDArray[np.float64], predicted: NDArray[np.float64]) -> float:
    """``2 * sum(y ln(y / p) - (y - p))``: how badly rates ``p`` explain counts ``y`` (0: perfectly)."""
    p = np.maximum(predicted, 1e-9)
    ratio = np.where(actual > 0, actual * np.log(np.where(actual > 0, actual, 1.0) / p), 0.0)
    return float(2.0 * np.sum(ratio - (actual - p)))


def choose_blend(actual: NDArray[np.float64], out_of_fold: NDArray[np.float64], floor: float,
                 steps: int) -> tuple[float, float]:
    """The forest's weight against the mean rate with the least out-of-fold deviance, and the deviance it saves."""
    mean = float(actual.mean())
    if steps <= 0 or mean <= 0:
        return 1.0, 0.0
    baseline = poisson_deviance(actual, np.full(len(actual), mean))
    best, best_deviance = 0.0, baseline
    for step in range(1, steps + 1):
        weight = step / steps
        blended = weight * np.maximum(out_of_fold, 0.0) + (1.0 - weight) * mean
        deviance = poisson_deviance(actual, np.maximum(blended, floor * mean))
        if deviance < best_deviance:
            best, best_deviance = weight, deviance
    return best, (1.0 - best_deviance / baseline) if baseline > 0 else 0.0


def separable_fit(x: NDArray[np.float64], y: NDArray[np.float64], rounds: int = 20) -> NDArray[np.float64]:
    """Poisson rates ``a[hour] * b[weekday]`` fitted to counts ``y`` of hours ``x`` (one-hot rows); 168 answers."""
    hour = np.argmax(x[:, :24], axis=1)
    day = np.argmax(x[:, 24:], axis=1)
    a = np.ones(24)
    b = np.full(7, max(float(y.mean()), 1e-9))
    hour_sums = np.bincount(hour, weights=y, minlength=24)
    day_sums = np.bincount(day, weights=y, minlength=7)
    for _ in range(rounds):
        exposure = np.bincount(hour, weights=b[day], minlength=24)
        a = np.where(exposure > 0, hour_sums / np.maximum(exposure, 1e-12), 0.0)
        exposure = np.bincount(day, weights=a[hour], minlength=7)
        b = np.where(exposure > 0, day_sums / np.maximum(exposure, 1e-12), float(y.mean()))
    week_hour = np.argmax(WEEK_FEATURES[:, :24], axis=1)
    week_day = np.argmax(WEEK_FEATURES[:, 24:], axis=1)
    out: NDArray[np.float64] = a[week_hour] * b[week_day]
    return out


def _week_index(x: NDArray[np.float64]) -> NDArray[np.intp]:
    index: NDArray[np.intp] = np.argmax(x[:, 24:], axis=1) * 24 + np.argmax(x[:, :24], axis=1)
    return index


def train_rate_model(times: Sequence[float], start: float, end: float, settings: ForestSettings) -> RateModel:
    """Fits the forest and the separable curve on the hourly counts of ``times`` in ``[start, end)``; keeps the better.

    The kept curve is blended with the mean rate as cross-validation says, floored and compiled.
    """
    first, hours = window_hours(start, end)
    if hours < 2 * settings.folds:
        raise ValueError(f"a window of {hours} h is too short to train on")
    x = hour_rows(first, hours)
    y = hourly_counts(times, first, hours)
    r2_cv = 0.0
    form, blend, skill = "forest", 1.0, 0.0
    if float(np.var(y)) > 0:
        folds = KFold(settings.folds, shuffle=True, random_state=settings.seed)
        forest_oof, separable_oof = np.zeros(hours), np.zeros(hours)
        scores = []
        for train_rows, test_rows in folds.split(x):
            predicted = _forest(settings).fit(x[train_rows], y[train_rows]).predict(x[test_rows])
            forest_oof[test_rows] = predicted
            scores.append(float(r2_score(y[test_rows], predicted)))
            separable_oof[test_rows] = separable_fit(x[train_rows], y[train_rows])[_week_index(x[test_rows])]
        r2_cv = float(np.mean(scores))
        blend, skill = choose_blend(y, forest_oof, settings.rate_floor, settings.blend_steps)
        if settings.blend_steps > 0:
            separable_blend, separable_skill = choose_blend(y, separable_oof, settings.rate_floor,
                                                            settings.blend_steps)
            if separable_skill > skill:
                form, blend, skill = "separable", separable_blend, separable_skill
    cut = round(hours * (1.0 - settings.holdout_fraction))
    r2_holdout = r2(y[cut:], _forest(settings).fit(x[:cut], y[:cut]).predict(x[cut:]))
    if form == "forest":
        predicted = np.maximum(_forest(settings).fit(x, y).predict(WEEK_FEATURES), 0.0)
    else:
        predicted = separable_fit(x, y)
    blended = blend * predicted + (1.0 - blend) * float(y.mean())
    rates = np.maximum(blended, settings.rate_floor * float(blended.mean()))
    rates = follow_clock_change(rates, y, first, settings)
    return RateModel(tuple(float(v) for v in rates), int(y.sum()), hours, r2_cv, r2_holdout, blend, skill, form)


def follow_clock_change(rates: NDArray[np.float64], y: NDArray[np.float64], first: float,
                        settings: ForestSettings) -> NDArray[np.float64]:
    """The weekly rates moved by an hour when the last ``clock_days`` of counts say the source's clock moved.

    A newsroom that starts or ends daylight saving time publishes an hour earlier or later in UTC
    from one day on; the model, trained mostly on the weeks before, is then an hour off. If the
    rates moved by one hour explain the last days' counts better by more than ``clock_evidence``
    (Poisson deviance), they are moved.
    """
    n = int(settings.clock_days * 24)
    if n <= 0 or len(y) < 2 * n or float(y[-n:].sum()) <= 0:
        return rates
    index = (hour_of_week(first) + np.arange(len(y) - n, len(y))) % HOURS_PER_WEEK
    recent = y[-n:]
    best, best_deviance = rates, poisson_deviance(recent, rates[index])
    for step in (-1, 1):
        moved = np.roll(rates, step)
        deviance = poisson_deviance(recent, moved[index])
        if deviance < best_deviance - settings.clock_evidence:
            best, best_deviance = moved, deviance
    return best


def r2_on_period(model: RateModel, times: Sequence[float], start: float, end: float) -> float:
    """R2 of the model's hourly predictions against what happened in ``[start, end)`` (a later period)."""
    first, hours = window_hours(start, end)
    actual = hourly_counts(times, first, hours)
    predicted = np.asarray(model.rates_per_hour)[(hour_of_week(first) + np.arange(hours)) % HOURS_PER_WEEK]
    return r2(actual, predicted)
