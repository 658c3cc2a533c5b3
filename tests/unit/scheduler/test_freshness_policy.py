"""The waiting-time rule: the square-root law, exact solutions across hours, bounds, budgets, bursts."""

from __future__ import annotations

import math

import pytest

from services.scheduler.freshness.bursts import BurstSettings, BurstState, observe
from services.scheduler.freshness.policy import (
    FixedIntervalPolicy,
    IntervalBounds,
    WaitingTimePolicy,
    budget_target,
    waiting_time_reached,
)
from services.scheduler.freshness.rates import HOUR, HOURS_PER_WEEK, WEEK, ConstantRate, HourlyRates
from services.scheduler.freshness.revisits import HubState, RevisitPlanner, page_revisit

MONDAY = 1772409600.0  # 2026-03-02T00:00:00Z
WIDE = IntervalBounds(1.0, 7 * 86400.0)


def test_constant_rate_gives_the_square_root_law() -> None:
    rate = 12.0 / HOUR
    for target in (5.0, 50.0, 500.0):
        plan = WaitingTimePolicy(target, WIDE).plan(ConstantRate(rate), MONDAY)
        assert plan.at - MONDAY == pytest.approx(math.sqrt(2 * target / rate))
        assert plan.expected_items == pytest.approx(rate * (plan.at - MONDAY))


def test_busier_hours_get_shorter_intervals_as_one_over_sqrt_rate() -> None:
    quiet, busy = 1.0, 16.0  # items per hour
    per_hour = [busy if 9 <= i % 24 < 17 else quiet for i in range(HOURS_PER_WEEK)]
    policy = WaitingTimePolicy(20.0, WIDE)
    at_ten = policy.plan(HourlyRates(per_hour), MONDAY + 10 * HOUR).at - (MONDAY + 10 * HOUR)
    at_two = policy.plan(HourlyRates(per_hour), MONDAY + 2 * HOUR).at - (MONDAY + 2 * HOUR)
    assert at_two / at_ten == pytest.approx(math.sqrt(busy / quiet))


def test_solution_is_exact_across_an_hour_boundary() -> None:
    per_hour = [0.0] * HOURS_PER_WEEK
    per_hour[1] = 3600.0  # one item a second, from 01:00 on Monday only
    start = MONDAY + 0.5 * HOUR
    reached = waiting_time_reached(HourlyRates(per_hour), start, 50.0, HOUR * 2)
    assert reached is not None
    # nothing before 01:00, then A(t) = (t - 01:00)^2 / 2
    assert reached[0] == pytest.approx(MONDAY + HOUR + 10.0)
    assert reached[1] == pytest.approx(10.0)
    assert waiting_time_reached(HourlyRates([0.0] * HOURS_PER_WEEK), start, 1.0, HOUR) is None


def test_bounds_hold() -> None:
    bounds = IntervalBounds(30.0, 600.0)
    fast = WaitingTimePolicy(1.0, bounds).plan(ConstantRate(100.0), MONDAY)
    slow = WaitingTimePolicy(1.0, bounds).plan(ConstantRate(1e-9), MONDAY)
    assert (fast.at - MONDAY, fast.reason) == (30.0, "minimum interval")
    assert (slow.at - MONDAY, slow.reason) == (600.0, "maximum interval")
    assert FixedIntervalPolicy(120.0).plan(ConstantRate(1.0), MONDAY).at == MONDAY + 120.0
    with pytest.raises(ValueError):
        IntervalBounds(10.0, 5.0)


def test_budget_target_spends_the_budget_on_constant_curves() -> None:
    rates = [2.0 / HOUR, 8.0 / HOUR, 32.0 / HOUR]
    target = budget_target([ConstantRate(r).weekly_sqrt_integral() for r in rates], 300.0)
    fetches = sum(WEEK / math.sqrt(2 * target / r) for r in rates)
    assert fetches == pytest.approx(3 * WEEK / 300.0)
    intervals = [math.sqrt(2 * target / r) for r in rates]
    assert intervals[0] / intervals[2] == pytest.approx(4.0)  # 16 times the rate, a quarter of the interval
    assert budget_target([0.0], 300.0) == math.inf


def test_a_burst_boosts_at_once_and_fades() -> None:
    settings = BurstSettings(sigmas=3.0, min_items=3, half_life=1800.0, max_boost=20.0)
    quiet = BurstState()
    assert observe(quiet, 2, 1.0, MONDAY, settings) == quiet  # within the noise
    assert observe(quiet, 30, 30.0, MONDAY, settings) == quiet  # as predicted
    burst = observe(quiet, 20, 1.0, MONDAY, settings)
    assert burst.boost == pytest.approx(21 / 2) and burst.since == MONDAY
    assert burst.factor(MONDAY + 1800.0, 1800.0) == pytest.approx(1 + 9.5 / 2)
    capped = observe(quiet, 500, 0.0, MONDAY, settings)
    assert capped.boost == 20.0
    assert observe(burst, 5, 1.0, MONDAY + 60, settings) == burst  # a smaller one keeps the larger boost


def test_planner_shortens_the_next_interval_after_a_burst_then_returns() -> None:
    planner = RevisitPlanner(WaitingTimePolicy(20.0, WIDE), BurstSettings(half_life=1800.0))
    curve = ConstantRate(6.0 / HOUR)
    state = HubState(MONDAY)
    calm = planner.plan(curve, state).at - MONDAY
    state = planner.fetched(state, MONDAY + calm)
    burst = planner.found(curve, state, MONDAY, found=40)
    shortened = planner.plan(curve, burst).at - burst.last_fetch
    assert shortened < calm / 3
    later = planner.fetched(burst, burst.last_fetch + 12 * 1800.0)  # twelve half-lives: the boost is gone
    assert planner.plan(curve, later).at - later.last_fetch == pytest.approx(calm, rel=0.02)
    assert planner.found(curve, state, None, 40) == state  # a first fetch says nothing about bursts


def test_page_revisit_from_the_estimated_rate() -> None:
    bounds = IntervalBounds(60.0, 30 * 86400.0)
    first = page_revisit(None, MONDAY, 1.0, bounds, 86400.0)
    assert first.at == MONDAY + 86400.0
    daily = page_revisit(1 / 86400.0, MONDAY, 1.0, bounds, 86400.0)
    assert daily.at == pytest.approx(MONDAY + 86400.0)
    never = page_revisit(0.0, MONDAY, 1.0, bounds, 86400.0)
    assert never.at == MONDAY + 30 * 86400.0
    hourly = page_revisit(1 / 3600.0, MONDAY, 0.5, bounds, 86400.0)
    assert hourly.at == pytest.approx(MONDAY + 1800.0)
