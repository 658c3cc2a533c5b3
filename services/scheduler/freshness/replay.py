"""Replays a hub page's history under a schedule, on a simulated clock, and scores it.

The clock is the replay's own: it jumps from one fetch to the next, and each fetch sees
the items that appeared since the one before. Measures, as seed 001 defines them:

- cost: fetches;
- hit rate: share of fetches that found at least one new item;
- delay: fetch time minus appearance time, per item (mean and variance). Items still
  unfetched when the replay ends count with the delay they had reached by then (and are
  reported as ``unfetched``), so a schedule cannot win by stopping early.

A schedule is anything with ``next_fetch(at, found) -> next instant``: the fixed intervals
of the baseline, and the service's own planner (:class:`PlannedSchedule`,
:class:`EstimatorSchedule`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Protocol

from services.scheduler.freshness.estimator import VisitHistory, change_rate
from services.scheduler.freshness.rates import ConstantRate, RateCurve
from services.scheduler.freshness.revisits import HubState, RevisitPlanner


class Schedule(Protocol):
    def next_fetch(self, at: float, found: int) -> float:
        """The fetch at ``at`` found ``found`` new items; when is the next one?"""
        ...


@dataclass
class Tally:
    fetches: int = 0
    hits: int = 0
    items: int = 0
    unfetched: int = 0
    delay_sum: float = 0.0
    delay_squares: float = 0.0

    def add(self, other: Tally) -> None:
        self.fetches += other.fetches
        self.hits += other.hits
        self.items += other.items
        self.unfetched += other.unfetched
        self.delay_sum += other.delay_sum
        self.delay_squares += other.delay_squares

    @property
    def hit_rate(self) -> float:
        return self.hits / self.fetches if self.fetches else 0.0

    @property
    def mean_delay(self) -> float:
        return self.delay_sum / self.items if self.items else 0.0

    @property
    def delay_variance(self) -> float:
        if not self.items:
            return 0.0
        mean = self.mean_delay
        return max(0.0, self.delay_squares / self.items - mean * mean)

    def figures(self) -> dict[str, float | int]:
        return {
            "cost": self.fetches,
            "hits": self.hits,
            "hit_rate": round(self.hit_rate, 4),
            "mean_delay": round(self.mean_delay, 2),
            "delay_variance": round(self.delay_variance, 1),
            "items": self.items,
            "unfetched": self.unfetched,
        }


@dataclass
class History:
    """Appearance times of one page's items (UNIX seconds, sorted), with prefix sums for the tally."""

    times: Sequence[float]
    origin: float = 0.0
    _sums: list[float] = field(init=False, repr=False)
    _squares: list[float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        shifted = [t - self.origin for t in self.times]  # small numbers: the squares stay exact enough
        self._sums = [0.0, *accumulate(shifted)]
        self._squares = [0.0, *accumulate(x * x for x in shifted)]

    def delays(self, lo: int, hi: int, at: float) -> tuple[float, float]:
        """Sum and sum of squares of ``at - t`` over items ``lo .. hi - 1``."""
        n = hi - lo
        x = at - self.origin
        total = self._sums[hi] - self._sums[lo]
        squares = self._squares[hi] - self._squares[lo]
        return n * x - total, n * x * x - 2.0 * x * total + squares


def replay(history: History, start: float, end: float, schedule: Schedule, measure_from: float | None = None) -> Tally:
    """Runs ``schedule`` from a first fetch at ``start`` until ``end``; scores fetches from ``measure_from`` on.

    Items that appeared before ``measure_from`` (default ``start``) are not counted: they were
    there before the measured period began.
    """
    measure = start if measure_from is None else measure_from
    times = history.times
    tally = Tally()
    seen = bisect_right(times, start)
    counted_from = bisect_right(times, measure)
    at = start
    while at <= end:
        upto = bisect_right(times, at, lo=seen)
        found = upto - seen
        if at >= measure:
            lo = max(seen, counted_from)
            tally.fetches += 1
            tally.hits += found > 0
            if upto > lo:
                total, squares = history.delays(lo, upto, at)
                tally.items += upto - lo
                tally.delay_sum += total
                tally.delay_squares += squares
        seen = upto
        following = schedule.next_fetch(at, found)
        at = following if following > at else at + 1e-3
    last = bisect_right(times, end, lo=seen)
    lo = max(seen, counted_from)
    if last > lo:
        total, squares = history.delays(lo, last, end)
        tally.items += last - lo
        tally.unfetched += last - lo
        tally.delay_sum += total
        tally.delay_squares += squares
    return tally


class FixedSchedule:
    def __init__(self, interval: float) -> None:
        self.interval = interval

    def next_fetch(self, at: float, found: int) -> float:
        return at + self.interval


class PlannedSchedule:
    """A hub with a model: the service's :class:`RevisitPlanner` over the model's curve."""

    def __init__(self, planner: RevisitPlanner, curve: RateCurve) -> None:
        self.planner = planner
        self.curve = curve
        self.state: HubState | None = None

    def next_fetch(self, at: float, found: int) -> float:
        previous = None if self.state is None else self.state.last_fetch
        state = HubState(at) if self.state is None else self.planner.fetched(self.state, at)
        state = self.planner.found(self.curve, state, previous, found)
        self.state = state
        return self.planner.plan(self.curve, state).at


class EstimatorSchedule:
    """A hub without a model: the same planner over the change rate estimated from its own visits."""

    def __init__(self, planner: RevisitPlanner, first_interval: float) -> None:
        self.planner = planner
        self.first_interval = first_interval
        self.visits = VisitHistory()
        self.state: HubState | None = None

    def next_fetch(self, at: float, found: int) -> float:
        if self.state is None:
            self.state = HubState(at)
            return at + self.first_interval
        previous = self.state.last_fetch
        self.visits = self.visits.add(at - previous, found > 0)
        rate = change_rate(self.visits)
        state = self.planner.fetched(self.state, at)
        if not rate:
            self.state = state
            return at + self.planner.policy.bounds.max_interval
        curve = ConstantRate(rate)
        self.state = self.planner.found(curve, state, previous, found)
        return self.planner.plan(curve, self.state).at
