"""The replay's measures, checked by hand on tiny histories."""

from __future__ import annotations

import pytest

from services.scheduler.freshness.bursts import BurstSettings
from services.scheduler.freshness.policy import IntervalBounds, WaitingTimePolicy
from services.scheduler.freshness.rates import HOUR, ConstantRate
from services.scheduler.freshness.replay import (
    EstimatorSchedule,
    FixedSchedule,
    History,
    PlannedSchedule,
    Tally,
    replay,
)
from services.scheduler.freshness.revisits import RevisitPlanner

T = 1772409600.0


def test_fixed_interval_cost_hits_and_delays() -> None:
    history = History([T + 5, T + 12, T + 13, T + 45], origin=T)
    tally = replay(history, T, T + 40, FixedSchedule(10.0))  # fetches at 0, 10, 20, 30, 40
    assert tally.fetches == 5
    assert tally.hits == 2  # at 10 (item 5) and at 20 (items 12, 13)
    assert tally.items == 3 and tally.unfetched == 0  # item 45 appears after the end: not counted
    assert tally.delay_sum == pytest.approx((10 - 5) + (20 - 12) + (20 - 13))


def test_items_after_the_end_are_not_counted_and_unfetched_ones_are_censored() -> None:
    history = History([T + 5, T + 12, T + 13, T + 38, T + 45], origin=T)
    tally = replay(history, T, T + 39, FixedSchedule(10.0))  # fetches at 0, 10, 20, 30; end at 39
    assert (tally.fetches, tally.hits) == (4, 2)
    assert tally.items == 4 and tally.unfetched == 1
    delays = [5.0, 8.0, 7.0, 1.0]  # item 38 waited until the end at 39
    assert tally.mean_delay == pytest.approx(sum(delays) / 4)
    mean = sum(delays) / 4
    assert tally.delay_variance == pytest.approx(sum((d - mean) ** 2 for d in delays) / 4)
    assert tally.hit_rate == 0.5


def test_items_before_the_measured_period_are_not_counted() -> None:
    history = History([T + 1, T + 2, T + 25], origin=T)
    tally = replay(history, T, T + 40, FixedSchedule(10.0), measure_from=T + 20)
    assert tally.fetches == 3 and tally.items == 1 and tally.mean_delay == pytest.approx(5.0)


def test_tallies_add_up() -> None:
    a = Tally(fetches=2, hits=1, items=1, delay_sum=4.0, delay_squares=16.0)
    a.add(Tally(fetches=2, hits=2, items=3, delay_sum=6.0, delay_squares=14.0))
    assert (a.fetches, a.hits, a.items, a.mean_delay) == (4, 3, 4, 2.5)
    assert a.figures()["hit_rate"] == 0.75


def test_planned_and_estimator_schedules_follow_the_rate() -> None:
    rate = 30.0 / HOUR
    times = [T + i * 120.0 for i in range(1, 300)]  # one item every two minutes
    planner = RevisitPlanner(WaitingTimePolicy(60.0, IntervalBounds(1.0, 6 * HOUR)), BurstSettings())
    planned = replay(History(times, T), T, T + 10 * HOUR, PlannedSchedule(planner, ConstantRate(rate)))
    expected_interval = (2 * 60.0 / rate) ** 0.5  # 120 s
    assert planned.fetches == pytest.approx(10 * HOUR / expected_interval, rel=0.05)
    estimated = replay(History(times, T), T, T + 10 * HOUR, EstimatorSchedule(planner, 300.0))
    assert estimated.hit_rate > 0.5 and estimated.fetches < planned.fetches * 1.5
