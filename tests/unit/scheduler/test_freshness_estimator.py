"""Cho and Garcia-Molina's change-rate estimator: its formula, and its low bias where X/n fails."""

from __future__ import annotations

import math
import random

import pytest

from services.scheduler.freshness.estimator import (
    VisitHistory,
    change_rate,
    changes_per_interval,
    history_of_versions,
)


def test_formula() -> None:
    assert changes_per_interval(10, 0) == 0.0
    assert changes_per_interval(10, 5) == pytest.approx(-math.log(5.5 / 10.5))
    assert changes_per_interval(10, 10) == pytest.approx(math.log(21.0))  # finite when every visit saw a change
    assert changes_per_interval(0, 0) == 0.0


def test_rate_needs_visits() -> None:
    assert change_rate(VisitHistory()) is None
    history = VisitHistory().add(3600.0, True).add(3600.0, False)
    assert change_rate(history) == pytest.approx(changes_per_interval(2, 1) / 3600.0)
    with pytest.raises(ValueError):
        VisitHistory(visits=1, changes=2)


def test_estimator_is_nearly_unbiased_where_the_naive_ratio_is_not() -> None:
    rng = random.Random(5)
    true_rate, interval, visits = 2.0 / 3600.0, 3600.0, 50  # two changes per interval on average
    estimates, naive = [], []
    for _ in range(400):
        history = VisitHistory()
        for _ in range(visits):
            changed = rng.random() < 1 - math.exp(-true_rate * interval)
            history = history.add(interval, changed)
        estimates.append(change_rate(history) or 0.0)
        naive.append(history.changes / history.span)
    mean = sum(estimates) / len(estimates)
    assert mean == pytest.approx(true_rate, rel=0.1)
    assert sum(naive) / len(naive) < 0.5 * true_rate  # X / n saturates: it cannot see two changes in one visit


def test_history_of_versions_counts_fingerprint_changes() -> None:
    history = history_of_versions([0.0, 100.0, 300.0, 600.0], ["a", "a", "b", "c"])
    assert history == VisitHistory(visits=3, changes=2, span=600.0)
    assert history_of_versions([5.0], ["a"]) == VisitHistory()
