"""Rate curves: hours of the week, exact integrals, and a burst boost that fades."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from services.scheduler.freshness.rates import (
    HOUR,
    HOURS_PER_WEEK,
    WEEK,
    BoostedCurve,
    ConstantRate,
    HourlyRates,
    boost_factor,
    expected_items,
    hour_of_week,
)

MONDAY = datetime(2026, 3, 2, tzinfo=UTC).timestamp()


def test_hour_of_week_starts_on_monday_midnight_utc() -> None:
    assert hour_of_week(MONDAY) == 0
    assert hour_of_week(MONDAY + 3599) == 0
    assert hour_of_week(MONDAY + HOUR) == 1
    assert hour_of_week(MONDAY + 6 * 86400 + 23 * HOUR) == 167
    assert hour_of_week(MONDAY + WEEK) == 0
    assert hour_of_week(datetime(2026, 3, 4, 9, 30, tzinfo=UTC).timestamp()) == 2 * 24 + 9  # a Wednesday
    assert hour_of_week(0.0) == 3 * 24  # 1970-01-01 was a Thursday


def test_hourly_rates_integrate_exactly_across_hours() -> None:
    per_hour = [float(i % 24) for i in range(HOURS_PER_WEEK)]  # i items in hour i of each day
    curve = HourlyRates(per_hour)
    assert curve.rate(MONDAY + 5 * HOUR + 10) == pytest.approx(5 / HOUR)
    assert expected_items(curve, MONDAY + 5 * HOUR, MONDAY + 6 * HOUR) == pytest.approx(5)
    assert expected_items(curve, MONDAY + 5.5 * HOUR, MONDAY + 7.25 * HOUR) == pytest.approx(2.5 + 6 + 1.75)
    assert expected_items(curve, MONDAY, MONDAY + WEEK) == pytest.approx(7 * sum(range(24)))
    assert expected_items(curve, MONDAY + 10, MONDAY + 10) == 0
    assert HourlyRates(per_hour, share=0.5).rate(MONDAY + 5 * HOUR) == pytest.approx(2.5 / HOUR)


def test_hourly_rates_refuse_a_wrong_shape() -> None:
    with pytest.raises(ValueError):
        HourlyRates([1.0] * 24)
    with pytest.raises(ValueError):
        HourlyRates([1.0] * HOURS_PER_WEEK, share=0)


def test_sqrt_integral_of_a_constant_curve() -> None:
    assert ConstantRate(4.0).weekly_sqrt_integral() == pytest.approx(2.0 * WEEK)
    assert HourlyRates([4.0 * HOUR] * HOURS_PER_WEEK).weekly_sqrt_integral() == pytest.approx(2.0 * WEEK)


def test_boost_halves_its_excess_every_half_life() -> None:
    assert boost_factor(5.0, 100.0, 1800.0, 100.0) == 5.0
    assert boost_factor(5.0, 100.0, 1800.0, 100.0 + 1800.0) == pytest.approx(3.0)
    assert boost_factor(5.0, 100.0, 1800.0, 100.0 + 3600.0) == pytest.approx(2.0)
    assert boost_factor(5.0, 100.0, 1800.0, 50.0) == 1.0  # before it was set
    assert boost_factor(1.0, 100.0, 1800.0, 200.0) == 1.0


def test_boosted_curve_is_piecewise_constant_and_integrates_its_factor() -> None:
    base = ConstantRate(1.0 / HOUR)
    curve = BoostedCurve(base, 3.0, MONDAY, 1800.0)
    step = 1800.0 / 4
    pieces = []
    for end, rate in curve.segments(MONDAY):
        pieces.append((end, rate))
        if end >= MONDAY + 3 * step:
            break
    assert [end - MONDAY for end, _ in pieces] == [step, 2 * step, 3 * step]
    assert pieces[0][1] == pytest.approx(3.0 / HOUR)
    assert pieces[1][1] == pytest.approx((1 + 2 * 0.5 ** 0.25) / HOUR)
    expected = sum((1 + 2 * 0.5 ** (k / 4)) * step / HOUR for k in range(8))
    assert expected_items(curve, MONDAY, MONDAY + 3600.0) == pytest.approx(expected)
    assert expected_items(BoostedCurve(base, 1.0, MONDAY, 1800.0), MONDAY, MONDAY + HOUR) == pytest.approx(1.0)


def test_boosted_curve_before_its_start_is_the_base() -> None:
    base = ConstantRate(2.0 / HOUR)
    curve = BoostedCurve(base, 4.0, MONDAY + HOUR, 600.0)
    assert expected_items(curve, MONDAY, MONDAY + HOUR) == pytest.approx(2.0)
    assert curve.rate(MONDAY + HOUR) == pytest.approx(8.0 / HOUR)
    assert not math.isinf(expected_items(curve, MONDAY, MONDAY + 10 * HOUR))
