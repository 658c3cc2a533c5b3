"""The decision the scheduler takes after each fetch of a page: when to fetch it again.

One class, used as-is by the scheduler service and by the offline evaluator:

- a hub page with a model: :class:`RevisitPlanner` over the model's hourly curve (scaled by
  the key's share), with the burst boost in force;
- a hub page without a model: the same planner over a constant curve, the change rate
  estimated from its visits (``estimator``);
- any other page: :func:`page_revisit`, the estimated change rate turned into an interval
  in which ``changes_per_visit`` changes are expected (a page that never changed waits the
  maximum; one never revisited yet waits ``first_interval``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.scheduler.freshness.bursts import BurstSettings, BurstState, observe
from services.scheduler.freshness.policy import IntervalBounds, Plan, WaitingTimePolicy
from services.scheduler.freshness.rates import RateCurve, expected_items


@dataclass(frozen=True)
class HubState:
    """What the planner remembers of a hub: its last fetch and the burst boost."""

    last_fetch: float
    burst: BurstState = field(default_factory=BurstState)


class RevisitPlanner:
    """Plans hub fetches with the waiting-time rule and reacts to bursts."""

    def __init__(self, policy: WaitingTimePolicy, bursts: BurstSettings) -> None:
        self.policy = policy
        self.bursts = bursts

    def curve(self, base: RateCurve, state: HubState) -> RateCurve:
        """The curve the next fetch is planned on: the base curve times the boost in force."""
        return state.burst.curve(base, self.bursts.half_life, state.last_fetch)

    def plan(self, base: RateCurve, state: HubState) -> Plan:
        return self.policy.plan(self.curve(base, state), state.last_fetch)

    def fetched(self, state: HubState, at: float) -> HubState:
        """A fetch happened at ``at``; what it found is not known yet (see :meth:`found`)."""
        return HubState(at, state.burst)

    def found(self, base: RateCurve, state: HubState, previous_fetch: float | None, found: int) -> HubState:
        """The fetch at ``state.last_fetch`` found ``found`` new items since ``previous_fetch``."""
        if previous_fetch is None or found <= 0:
            return state
        predicted = expected_items(base, previous_fetch, state.last_fetch)
        return HubState(state.last_fetch, observe(state.burst, found, predicted, state.last_fetch, self.bursts))


def page_revisit(
    rate: float | None, last_fetch: float, changes_per_visit: float, bounds: IntervalBounds, first_interval: float
) -> Plan:
    """The next fetch of a page that is not a hub, from its estimated change rate (per second)."""
    if rate is None:
        at = last_fetch + bounds.clamp(first_interval)
        return Plan(at, 0.0, "first revisit: no change history yet")
    if rate <= 0:
        return Plan(last_fetch + bounds.max_interval, 0.0, "no change seen: maximum interval")
    interval = bounds.clamp(changes_per_visit / rate)
    return Plan(last_fetch + interval, rate * interval, f"estimated {rate * 86400:.3g} changes a day")
