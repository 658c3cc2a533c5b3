"""Bursts (the weakness seed 001 states): react at once when a fetch finds far more than predicted.

After each fetch the number of new items it found is compared with what the curve (times
the boost still in force) predicted for the interval. Far more than predicted (beyond
``sigmas`` Poisson standard deviations, and at least ``min_items``) sets a boost of
``(found + 1) / (predicted + 1)``, capped at ``max_boost``: the rate curve is multiplied by
it, so the next fetch comes sooner. The boost then halves its excess every ``half_life``
seconds and the curve returns to the model's (:class:`~services.scheduler.freshness.rates.
BoostedCurve`). Fewer items than predicted change nothing: the model already says when
it is quiet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from services.scheduler.freshness.rates import BoostedCurve, RateCurve, boost_factor

FADED = 1e-3  # a boost this close to 1 is none


@dataclass(frozen=True)
class BurstSettings:
    sigmas: float = 3.0
    min_items: int = 3
    half_life: float = 1800.0
    max_boost: float = 20.0


@dataclass(frozen=True)
class BurstState:
    """A boost and the instant it was set (or last confirmed); ``boost == 1`` means none."""

    boost: float = 1.0
    since: float = 0.0

    def factor(self, at: float, half_life: float) -> float:
        return boost_factor(self.boost, self.since, half_life, at)

    def curve(self, base: RateCurve, half_life: float, at: float) -> RateCurve:
        """``base`` boosted from ``at`` on, or ``base`` itself once the boost has faded."""
        if self.factor(at, half_life) <= 1.0 + FADED:
            return base
        return BoostedCurve(base, self.boost, self.since, half_life)


def observe(state: BurstState, found: int, predicted: float, at: float, settings: BurstSettings) -> BurstState:
    """The burst state after a fetch at ``at`` found ``found`` new items where the model predicted ``predicted``.

    ``predicted`` is the base curve's expectation over the interval, without the boost.
    """
    current = state.factor(at, settings.half_life)
    expected = predicted * current
    if found >= settings.min_items and found > expected + settings.sigmas * math.sqrt(expected) + 1.0:
        boost = min(settings.max_boost, (found + 1.0) / (predicted + 1.0))
        if boost > current:
            return BurstState(boost, at)
    return state
