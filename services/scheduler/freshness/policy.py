"""When to fetch a hub page again, given its rate curve: the waiting-time rule and fixed intervals.

The rule (:class:`WaitingTimePolicy`): fetch again when the items expected to have appeared
since the last fetch have, together, waited ``target`` item-seconds::

    A(t) = integral from t_last to t of rate(s) * (t - s) ds  >=  target

For a constant rate this is the square-root rule ``interval = sqrt(2 * target / rate)``, and
over a varying rate it spaces fetches as ``1 / sqrt(rate)``: that is the spacing that
minimises the mean delay of new items for a given number of fetches (Lagrange: minimise
``sum rate_i * I_i / 2`` subject to ``sum 1 / I_i = budget``). Fetching when the expected
*count* reaches a target (interval ``k / rate``, the literal reading of seed 001) equalises
hits per fetch but gives no delay gain at all over a fixed interval of the same cost;
``target`` is the single exchange rate between delay and fetches, and one target over all
hubs also spreads the budget over hubs delay-optimally (busier hubs get more fetches, as
``sqrt(rate)``). :func:`budget_target` turns a fetch budget (a mean revisit interval per
hub) into that target. The result is bounded by a minimum and a maximum interval;
politeness (one request per host, the host's gap) is applied later, by the dispatcher.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from services.scheduler.freshness.rates import WEEK, RateCurve, expected_items


@dataclass(frozen=True)
class IntervalBounds:
    """Shortest and longest time between two fetches of one page, in seconds."""

    min_interval: float
    max_interval: float

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError(f"need 0 < min_interval <= max_interval, got {self}")

    def clamp(self, interval: float) -> float:
        return min(max(interval, self.min_interval), self.max_interval)


@dataclass(frozen=True)
class Plan:
    """The next fetch of a page: when, what it is expected to find, and why then."""

    at: float
    expected_items: float
    reason: str


def waiting_time_reached(curve: RateCurve, start: float, target: float,
                         horizon: float) -> tuple[float, float] | None:
    """The first ``t`` in ``(start, start + horizon]`` with ``A(t) >= target`` and the items expected by then.

    ``None`` when the target is not reached within the horizon.

    Within a constant piece ``[c, e)`` of rate ``r``: ``A(t) = A(c) + N(c) (t - c) + r (t - c)^2 / 2``,
    ``N(c)`` the items expected since ``start``; solved exactly piece by piece.
    """
    waited = 0.0
    items = 0.0
    cursor = start
    limit = start + horizon
    for seg_end, rate in curve.segments(start):
        end = min(seg_end, limit)
        span = end - cursor
        at_end = waited + items * span + rate * span * span / 2.0
        if at_end >= target:
            need = target - waited
            step = (-items + math.sqrt(items * items + 2.0 * rate * need)) / rate if rate > 0 else need / items
            step = min(max(step, 0.0), span)
            return cursor + step, items + rate * step
        if end >= limit:
            return None
        waited = at_end
        items += rate * span
        cursor = end
    return None  # pragma: no cover - segments are endless


class WaitingTimePolicy:
    """Next fetch when the expected waiting of unseen items reaches ``target`` item-seconds."""

    name = "waiting-time"

    def __init__(self, target: float, bounds: IntervalBounds) -> None:
        if target <= 0:
            raise ValueError(f"target must be > 0, got {target}")
        self.target = target
        self.bounds = bounds

    def plan(self, curve: RateCurve, last_fetch: float) -> Plan:
        reached = waiting_time_reached(curve, last_fetch, self.target, self.bounds.max_interval)
        if reached is None:
            at = last_fetch + self.bounds.max_interval
            return Plan(at, expected_items(curve, last_fetch, at), "maximum interval")
        if reached[0] - last_fetch < self.bounds.min_interval:
            at = last_fetch + self.bounds.min_interval
            return Plan(at, expected_items(curve, last_fetch, at), "minimum interval")
        return Plan(reached[0], reached[1], f"expected waiting reaches {self.target:.3g} item-seconds")


class FixedIntervalPolicy:
    """The baseline: every ``interval`` seconds, whatever the curve says."""

    name = "fixed"

    def __init__(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self.interval = interval

    def plan(self, curve: RateCurve, last_fetch: float) -> Plan:
        at = last_fetch + self.interval
        return Plan(at, expected_items(curve, last_fetch, at), f"fixed interval {self.interval:g} s")


def budget_target(sqrt_integrals: Sequence[float], mean_interval: float) -> float:
    """The waiting target that spends, over pages with these curves, one fetch per ``mean_interval`` each.

    With the rule, a page of rate ``r(t)`` is fetched ``sqrt(r(t) / (2 target))`` times per second,
    so a week costs ``W / sqrt(2 target)`` fetches, ``W`` the weekly integral of ``sqrt(r)``
    (``weekly_sqrt_integral`` of the curve). Equating the sum over pages to the budget gives
    ``target = (sum W)^2 / (2 budget^2)``. Bounds (and bursts) move the real cost a little off it.
    """
    if mean_interval <= 0:
        raise ValueError(f"mean_interval must be > 0, got {mean_interval}")
    total = sum(sqrt_integrals)
    budget = len(sqrt_integrals) * WEEK / mean_interval
    if total <= 0 or budget <= 0:
        return math.inf
    return total * total / (2.0 * budget * budget)
