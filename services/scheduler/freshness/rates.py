"""Rate curves: how many new items a source is expected to publish per second, over time.

Time is UNIX seconds (UTC) as floats throughout the freshness package: the policies run
millions of steps in the offline evaluator, and datetimes would dominate the cost. A
curve is piecewise constant; :meth:`RateCurve.segments` walks its pieces from an instant
on, which is all the policies need to integrate it exactly.

- :class:`HourlyRates`: one rate per hour of the week (168 values, Monday 00:00 UTC first),
  what a trained model predicts (``services.scheduler.freshness.model``);
- :class:`ConstantRate`: the model-free change-rate estimate (``estimator``);
- :class:`BoostedCurve`: another curve times a burst boost that decays back to 1
  (``bursts``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Protocol

HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY
HOURS_PER_WEEK = 168
_EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)
BOOST_STEPS_PER_HALF_LIFE = 4


def hour_of_week(at: float) -> int:
    """Index of the hour of the week of ``at`` (UTC): ``weekday * 24 + hour``, Monday 00:00 = 0."""
    day = math.floor(at / DAY)
    return ((day + _EPOCH_WEEKDAY) % 7) * 24 + int((at - day * DAY) // HOUR)


class RateCurve(Protocol):
    """Expected new items per second, piecewise constant in time."""

    def rate(self, at: float) -> float:
        """Items per second at instant ``at``."""
        ...

    def segments(self, start: float) -> Iterator[tuple[float, float]]:
        """``(end, rate)`` of each constant piece from ``start`` on, in order; endless."""
        ...


def expected_items(curve: RateCurve, start: float, end: float) -> float:
    """Expected number of new items in ``(start, end]``."""
    total = 0.0
    cursor = start
    if end <= start:
        return 0.0
    for seg_end, rate in curve.segments(start):
        stop = min(seg_end, end)
        total += rate * (stop - cursor)
        if stop >= end:
            return total
        cursor = stop
    return total  # pragma: no cover - segments are endless


class HourlyRates:
    """A rate per hour of the week, scaled by ``share`` (a section's part of its host's model)."""

    def __init__(self, per_hour: Sequence[float], share: float = 1.0) -> None:
        if len(per_hour) != HOURS_PER_WEEK:
            raise ValueError(f"need {HOURS_PER_WEEK} hourly rates, got {len(per_hour)}")
        if share <= 0:
            raise ValueError(f"share must be > 0, got {share}")
        self.per_hour = tuple(max(0.0, float(r)) for r in per_hour)
        self.share = share
        self._per_second = tuple(r * share / HOUR for r in self.per_hour)

    def rate(self, at: float) -> float:
        return self._per_second[hour_of_week(at)]

    def segments(self, start: float) -> Iterator[tuple[float, float]]:
        index = hour_of_week(start)
        end = (math.floor(start / HOUR) + 1) * HOUR
        while True:
            yield end, self._per_second[index]
            index = (index + 1) % HOURS_PER_WEEK
            end += HOUR

    def mean_rate(self) -> float:
        """Items per second averaged over the week."""
        return sum(self._per_second) / HOURS_PER_WEEK

    def weekly_sqrt_integral(self) -> float:
        """The integral of sqrt(rate) over one week: what a fetch budget is spread by (see ``policy``)."""
        return sum(math.sqrt(r) for r in self._per_second) * HOUR


class ConstantRate:
    """The same rate at every instant."""

    def __init__(self, per_second: float) -> None:
        self.per_second = max(0.0, per_second)

    def rate(self, at: float) -> float:
        return self.per_second

    def segments(self, start: float) -> Iterator[tuple[float, float]]:
        while True:
            yield math.inf, self.per_second

    def mean_rate(self) -> float:
        return self.per_second

    def weekly_sqrt_integral(self) -> float:
        return math.sqrt(self.per_second) * WEEK


def boost_factor(boost: float, since: float, half_life: float, at: float) -> float:
    """A boost set to ``boost`` at ``since`` as it stands at ``at``: its excess over 1 halves every ``half_life``.

    It is held constant over steps of a quarter half-life, so a boosted curve stays piecewise constant.
    """
    if boost <= 1.0 or at < since:
        return 1.0
    steps = math.floor((at - since) / (half_life / BOOST_STEPS_PER_HALF_LIFE) + 1e-9)
    return 1.0 + (boost - 1.0) * float(0.5 ** (steps / BOOST_STEPS_PER_HALF_LIFE))


class BoostedCurve:
    """``base`` times :func:`boost_factor`; a boost of 1 is the base curve itself."""

    def __init__(self, base: RateCurve, boost: float, since: float, half_life: float) -> None:
        self.base = base
        self.boost = max(1.0, boost)
        self.since = since
        self.half_life = half_life

    def factor(self, at: float) -> float:
        """The boost in force at ``at``."""
        return boost_factor(self.boost, self.since, self.half_life, at)

    def rate(self, at: float) -> float:
        return self.base.rate(at) * self.factor(at)

    def segments(self, start: float) -> Iterator[tuple[float, float]]:
        if self.boost <= 1.0:
            yield from self.base.segments(start)
            return
        step = self.half_life / BOOST_STEPS_PER_HALF_LIFE
        cursor = start
        for seg_end, rate in self.base.segments(start):
            while cursor < seg_end:
                if cursor < self.since:
                    cut = min(seg_end, self.since)
                else:
                    k = math.floor((cursor - self.since) / step + 1e-9)  # rounding must not repeat a step
                    cut = min(seg_end, max(self.since + (k + 1) * step, cursor + 1e-6))
                yield cut, rate * self.factor(cursor)
                cursor = cut
