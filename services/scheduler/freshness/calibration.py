"""The waiting target that spends the fetch budget, found by replaying the hubs' recent history.

:func:`~services.scheduler.freshness.policy.budget_target` computes the target from the rate
curves alone, assuming every fetch comes exactly when the rule says. What a hub really costs
also depends on the minimum and maximum intervals, the burst boosts and, for a hub planned by
its visits (the estimator), on how its estimate moves: on histories whose items come in
batches the estimator counts a batch once and fetches less than the curves assume, while a
model whose curve has sharp peaks fetches more. Two policies given the same budget then
spend different amounts, and cannot be compared, nor trusted to keep the budget.

So the trainer (and the offline evaluator, with the same functions) replays the last
``days`` of the hubs' own history under the policy, with the trained curves and the service's
planner, and rescales the target until those days cost the budget: a period's fetches go as
``1 / sqrt(target)`` under the rule, so each round multiplies the target by the square of
spent / budget. Only history before the training cut is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.scheduler.freshness.bursts import BurstSettings
from services.scheduler.freshness.policy import IntervalBounds, WaitingTimePolicy
from services.scheduler.freshness.rates import DAY, RateCurve
from services.scheduler.freshness.replay import EstimatorSchedule, History, PlannedSchedule, Tally, replay
from services.scheduler.freshness.revisits import RevisitPlanner

CALIBRATION_DAYS = 14.0
ROUNDS = 6
TOLERANCE = 0.005


def run_hubs(histories: Mapping[str, History], curves: Mapping[str, RateCurve | None], planner: RevisitPlanner,
             first_interval: float, warm_from: float, start: float, end: float) -> Tally:
    """Replays every hub from ``start`` to ``end``: a hub with a curve by it, the others by their visits.

    A hub planned by its visits starts at ``warm_from`` (its estimate learns from the visits
    before ``start``, which are not counted).
    """
    tally = Tally()
    for key, history in histories.items():
        curve = curves.get(key)
        if curve is not None:
            tally.add(replay(history, start, end, PlannedSchedule(planner, curve)))
        else:
            tally.add(replay(history, warm_from, end, EstimatorSchedule(planner, first_interval), measure_from=start))
    return tally


def calibrate(first_guess: float, fetches_at: Callable[[float], int], budget: float, rounds: int = ROUNDS,
              tolerance: float = TOLERANCE) -> float:
    """The target at which ``fetches_at(target)`` is ``budget`` (within ``tolerance``), from ``first_guess``."""
    target = first_guess
    if budget <= 0 or not 0 < target < float("inf"):
        return target
    for _ in range(rounds):
        spent = fetches_at(target)
        if spent <= 0:
            return target
        ratio = spent / budget
        if abs(ratio - 1.0) <= tolerance:
            break
        target *= ratio * ratio
    return target


def calibrated_target(first_guess: float, histories: Mapping[str, History], curves: Mapping[str, RateCurve | None],
                      hub_interval: float, bounds: IntervalBounds, bursts: BurstSettings, first_interval: float,
                      since: float, until: float, days: float = CALIBRATION_DAYS) -> float:
    """The target that makes the hubs' last ``days`` before ``until`` cost one fetch per ``hub_interval`` each.

    ``since`` is where their history starts (the estimator's hubs warm up from there).
    """
    start = max(since, until - days * DAY)
    if not histories or until - start < DAY:
        return first_guess
    budget = len(histories) * (until - start) / hub_interval

    def fetches_at(target: float) -> int:
        planner = RevisitPlanner(WaitingTimePolicy(target, bounds), bursts)
        return run_hubs(histories, curves, planner, first_interval, since, start, until).fetches

    return calibrate(first_guess, fetches_at, budget)
