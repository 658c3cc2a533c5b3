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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score

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


@dataclass(frozen=True)
class RateModel:
    """A trained key's predictions: new items per hour for each hour of the week, and its quality."""

    rates_per_hour: tuple[float, ...]
    samples: int
    hours: int
    r2_cv: float
    r2_holdout: float

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


def train_rate_model(times: Sequence[float], start: float, end: float, settings: ForestSettings) -> RateModel:
    """Fits the forest on the hourly counts of ``times`` within ``[start, end)`` and compiles it."""
    first, hours = window_hours(start, end)
    if hours < 2 * settings.folds:
        raise ValueError(f"a window of {hours} h is too short to train on")
    x = hour_rows(first, hours)
    y = hourly_counts(times, first, hours)
    r2_cv = 0.0
    if float(np.var(y)) > 0:
        folds = KFold(settings.folds, shuffle=True, random_state=settings.seed)
        r2_cv = float(np.mean(cross_val_score(_forest(settings), x, y, cv=folds, scoring="r2")))
    cut = round(hours * (1.0 - settings.holdout_fraction))
    r2_holdout = r2(y[cut:], _forest(settings).fit(x[:cut], y[:cut]).predict(x[cut:]))
    forest = _forest(settings).fit(x, y)
    predicted = np.maximum(forest.predict(WEEK_FEATURES), 0.0)
    rates = np.maximum(predicted, settings.rate_floor * float(predicted.mean()))
    return RateModel(tuple(float(v) for v in rates), int(y.sum()), hours, r2_cv, r2_holdout)


def r2_on_period(model: RateModel, times: Sequence[float], start: float, end: float) -> float:
    """R2 of the model's hourly predictions against what happened in ``[start, end)`` (a later period)."""
    first, hours = window_hours(start, end)
    actual = hourly_counts(times, first, hours)
    predicted = np.asarray(model.rates_per_hour)[(hour_of_week(first) + np.arange(hours)) % HOURS_PER_WEEK]
    return r2(actual, predicted)
