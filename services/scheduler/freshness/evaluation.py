"""The offline evaluation of seed 001, on an appearance history: train, then replay against fixed intervals.

Steps (``trawl eval freshness``; figures documented in ``docs/evaluation.md``):

1. The history (items per key) is cut at ``train_days`` after the first day boundary: keys are
   routed (own model, folded into the host's, or none) by their training counts, and a model
   is trained per model key, as the trainer of the service does.
2. The waiting target is set from the fetch budget (``hub_interval``: the mean revisit
   interval per hub), as the service sets it.
3. Each key is one hub page. The rest of the history is replayed for each fixed interval of
   the paper, and for the policy: keys with a model under :class:`PlannedSchedule`, the others
   (and every key, with ``policy="estimator"``) under :class:`EstimatorSchedule`, warmed up on
   the training days.
4. Against the median of the fixed intervals (per measure, as the paper reports it), and at
   equal cost: for each fixed interval, the policy's budget is tuned until it spends the same
   number of fetches (never more), and the two mean delays are compared.
5. With both policies, the learned one is also run with its target rescaled to spend what the
   estimator spent, or just under (``at_estimator_cost``): the two compared at one cost.
6. With ``oracle``, a reference no model can beat with the models' features: the same rule
   planned on each key's mean items per hour of the week over the whole history, test days
   included (:func:`weekly_profile`), tuned to the learned policy's cost. It is evaluator-only:
   the service never plans with it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from services.scheduler.freshness.bursts import BurstSettings
from services.scheduler.freshness.keys import Route, route_keys
from services.scheduler.freshness.model import (
    ForestSettings,
    RateModel,
    hourly_counts,
    observed_from,
    r2_on_period,
    train_rate_model,
    window_hours,
)
from services.scheduler.freshness.policy import IntervalBounds, WaitingTimePolicy, budget_target
from services.scheduler.freshness.rates import (
    DAY,
    HOUR,
    HOURS_PER_WEEK,
    ConstantRate,
    HourlyRates,
    RateCurve,
    hour_of_week,
)
from services.scheduler.freshness.replay import (
    EstimatorSchedule,
    FixedSchedule,
    History,
    PlannedSchedule,
    Tally,
    replay,
)
from services.scheduler.freshness.revisits import RevisitPlanner

PAPER_INTERVALS: tuple[float, ...] = (10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200)
POLICIES = ("learned", "estimator")
MEASURES = ("cost", "hit_rate", "mean_delay", "delay_variance")


@dataclass(frozen=True)
class EvaluationSettings:
    train_days: float = 30.0
    min_samples: int = 1000
    hub_interval: float = 280.0
    bounds: IntervalBounds = field(default_factory=lambda: IntervalBounds(2.0, 6 * HOUR))
    first_interval: float = 300.0
    bursts: BurstSettings = field(default_factory=BurstSettings)
    forest: ForestSettings = field(default_factory=ForestSettings)
    intervals: tuple[float, ...] = PAPER_INTERVALS
    equal_cost: bool = True
    oracle: bool = False


@dataclass(frozen=True)
class Split:
    train_start: float
    train_end: float
    test_end: float


@dataclass
class Trained:
    routes: dict[str, Route]
    models: dict[str, RateModel]
    model_times: dict[str, list[float]]

    def curve(self, key: str) -> HourlyRates | None:
        route = self.routes.get(key)
        return None if route is None else self.models[route.model_key].curve(route.share)


def split(history: Mapping[str, Sequence[float]], train_days: float) -> Split:
    first = min(times[0] for times in history.values() if times)
    last = max(times[-1] for times in history.values() if times)
    start = math.floor(first / DAY) * DAY
    train_end = start + train_days * DAY
    test_end = math.ceil(last / HOUR) * HOUR
    if test_end <= train_end:
        raise ValueError(f"the history ends before {train_days:g} training days are over: nothing to replay")
    return Split(start, train_end, test_end)


def train(history: Mapping[str, Sequence[float]], window: Split, settings: EvaluationSettings) -> Trained:
    """Routes and models from the training days, as the service's trainer makes them."""
    in_window = {key: [t for t in times if window.train_start <= t < window.train_end]
                 for key, times in history.items()}
    routes = route_keys({key: len(times) for key, times in in_window.items()}, settings.min_samples)
    model_times: dict[str, list[float]] = {}
    for key, route in routes.items():
        model_times.setdefault(route.model_key, []).extend(in_window[key])
    models = {mk: train_rate_model(sorted(times), observed_from(times, window.train_start), window.train_end,
                                   settings.forest)
              for mk, times in sorted(model_times.items())}
    return Trained(routes, models, model_times)


def _planner(target: float, settings: EvaluationSettings) -> RevisitPlanner:
    return RevisitPlanner(WaitingTimePolicy(target, settings.bounds), settings.bursts)


def waiting_target(history: Mapping[str, Sequence[float]], window: Split, trained: Trained, policy: str,
                   hub_interval: float) -> float:
    """The service's target for this budget: over model curves (learned) or mean-rate curves (estimator)."""
    integrals = []
    for key, times in history.items():
        curve = trained.curve(key) if policy == "learned" else None
        if curve is not None:
            integrals.append(curve.weekly_sqrt_integral())
        else:
            count = sum(1 for t in times if window.train_start <= t < window.train_end)
            integrals.append(ConstantRate(count / (window.train_end - window.train_start)).weekly_sqrt_integral())
    return budget_target(integrals, hub_interval)


def run_policy(histories: Mapping[str, History], window: Split, trained: Trained, policy: str,
               settings: EvaluationSettings, target: float) -> Tally:
    curves = {key: trained.curve(key) if policy == "learned" else None for key in histories}
    return run_curves(histories, window, curves, settings, target)


def run_curves(histories: Mapping[str, History], window: Split, curves: Mapping[str, RateCurve | None],
               settings: EvaluationSettings, target: float) -> Tally:
    """The test period with each key planned on its curve, or by its visits (no curve), at ``target``."""
    planner = _planner(target, settings)
    tally = Tally()
    for key, history in histories.items():
        curve = curves.get(key)
        if curve is not None:
            tally.add(replay(history, window.train_end, window.test_end, PlannedSchedule(planner, curve)))
        else:
            warm = EstimatorSchedule(planner, settings.first_interval)
            tally.add(replay(history, window.train_start, window.test_end, warm, measure_from=window.train_end))
    return tally


def at_cost(run: Callable[[float], Tally], target: float, cost: int, rounds: int = 8,
            tolerance: float = 0.005) -> tuple[float, Tally]:
    """The waiting target at which ``run`` spends ``cost`` fetches or just under, from ``target``, and its tally.

    Under the rule a period's fetches go as ``1 / sqrt(target)``, so each round multiplies the
    target by the square of spent / cost; a last rescaling makes sure no more than ``cost`` is spent.
    """
    tally = run(target)
    for _ in range(rounds):
        if tally.fetches <= 0 or cost * (1.0 - tolerance) <= tally.fetches <= cost:
            break
        target *= (tally.fetches / cost) ** 2
        tally = run(target)
    while tally.fetches > cost:
        target *= (1.005 * tally.fetches / cost) ** 2
        tally = run(target)
    return target, tally


def weekly_profile(times: Sequence[float], start: float, end: float, floor: float) -> HourlyRates:
    """The mean item count of each hour of the week over ``[start, end)``: the oracle's curve.

    Taken over the whole history, test period included, it is the best curve the models' features
    (hour of day and weekday) can express there: no model trained on the past has a better one.
    Floored at ``floor`` times its mean, as the models' rates are.
    """
    first, hours = window_hours(start, end)
    counts = hourly_counts(times, first, hours)
    first_hour = hour_of_week(first)
    sums = [0.0] * HOURS_PER_WEEK
    seen = [0] * HOURS_PER_WEEK
    for offset, count in enumerate(counts):
        index = (first_hour + offset) % HOURS_PER_WEEK
        sums[index] += float(count)
        seen[index] += 1
    rates = [sums[i] / seen[i] if seen[i] else 0.0 for i in range(HOURS_PER_WEEK)]
    mean = sum(rates) / HOURS_PER_WEEK
    return HourlyRates([max(r, floor * mean) for r in rates])


def run_oracle(history: Mapping[str, Sequence[float]], histories: Mapping[str, History], window: Split,
               settings: EvaluationSettings, cost: int) -> tuple[float, Tally]:
    """The waiting-time rule on each key's :func:`weekly_profile`, at ``cost`` fetches or just under."""
    profiles = {key: weekly_profile(times, window.train_start, window.test_end, settings.forest.rate_floor)
                for key, times in history.items()}
    curves: dict[str, RateCurve | None] = dict(profiles)
    target = budget_target([p.weekly_sqrt_integral() for p in profiles.values()], settings.hub_interval)
    return at_cost(lambda t: run_curves(histories, window, curves, settings, t), target, cost)


def run_fixed(histories: Mapping[str, History], window: Split, interval: float) -> Tally:
    tally = Tally()
    for history in histories.values():
        tally.add(replay(history, window.train_end, window.test_end, FixedSchedule(interval)))
    return tally


def median_figures(fixed: Sequence[Tally]) -> dict[str, float]:
    return {
        "cost": float(statistics.median(t.fetches for t in fixed)),
        "hit_rate": float(statistics.median(t.hit_rate for t in fixed)),
        "mean_delay": float(statistics.median(t.mean_delay for t in fixed)),
        "delay_variance": float(statistics.median(t.delay_variance for t in fixed)),
    }


def versus(tally: Tally, median: Mapping[str, float]) -> dict[str, float]:
    """Relative change of each measure against the median fixed interval (-0.3 = 30% lower)."""
    mine = {"cost": float(tally.fetches), "hit_rate": tally.hit_rate, "mean_delay": tally.mean_delay,
            "delay_variance": tally.delay_variance}
    return {m: round(mine[m] / median[m] - 1.0, 4) if median[m] else 0.0 for m in MEASURES}


def cost_matched(run: Callable[[float], Tally], cost: int, start: float, rounds: int = 6,
                 tolerance: float = 0.02) -> tuple[float, Tally]:
    """The budget (mean hub interval) at which ``run`` spends ``cost`` fetches or just under, and its tally.

    A week's cost is inversely proportional to the budget interval, so each round rescales it by
    the cost ratio; a last rescaling makes sure the policy never spends more than the baseline.
    """
    interval = start
    tally = run(interval)
    for _ in range(rounds):
        if cost * (1.0 - tolerance) <= tally.fetches <= cost:
            break
        interval *= tally.fetches / cost
        tally = run(interval)
    while tally.fetches > cost:
        interval *= 1.01 * tally.fetches / cost
        tally = run(interval)
    return interval, tally


def evaluate(history: Mapping[str, Sequence[float]], settings: EvaluationSettings,
             policies: Sequence[str] = ("learned",)) -> dict[str, Any]:
    """Every figure of the evaluation, as one JSON-ready object (keys in ``docs/evaluation.md``)."""
    window = split(history, settings.train_days)
    trained = train(history, window, settings)
    histories = {key: History(times, window.train_start) for key, times in sorted(history.items())}
    fixed = [run_fixed(histories, window, interval) for interval in settings.intervals]
    median = median_figures(fixed)
    out: dict[str, Any] = {
        "history": _history_figures(history, window),
        "models": _model_figures(history, window, trained, settings),
        "fixed": [{"interval": interval, **t.figures()} for interval, t in zip(settings.intervals, fixed, strict=True)],
        "median_fixed": {m: round(v, 4) for m, v in median.items()},
        "policies": {},
    }
    for policy in policies:
        target = waiting_target(history, window, trained, policy, settings.hub_interval)
        tally = run_policy(histories, window, trained, policy, settings, target)
        change = versus(tally, median)
        entry: dict[str, Any] = {
            **tally.figures(), "waiting_target": round(target, 4), "hub_interval": settings.hub_interval,
            "vs_median": change,
            "beats_median_on_all_three": change["cost"] < 0 and change["hit_rate"] > 0 and change["mean_delay"] < 0,
        }
        if settings.equal_cost:
            entry["equal_cost"] = _equal_cost(history, histories, window, trained, policy, settings, fixed)
        out["policies"][policy] = entry
    policies_run = out["policies"]
    if "learned" in policies_run and "estimator" in policies_run:
        target, tally = at_cost(lambda t: run_policy(histories, window, trained, "learned", settings, t),
                                policies_run["learned"]["waiting_target"], int(policies_run["estimator"]["cost"]))
        policies_run["learned"]["at_estimator_cost"] = {**tally.figures(), "waiting_target": round(target, 4),
                                                        "vs_median": versus(tally, median)}
    if settings.oracle and policies_run:
        cost = int(policies_run["learned" if "learned" in policies_run else policy]["cost"])
        oracle_target, oracle = run_oracle(history, histories, window, settings, cost)
        change = versus(oracle, median)
        out["oracle"] = {**oracle.figures(), "waiting_target": round(oracle_target, 4), "vs_median": change,
                         "beats_median_on_all_three": change["cost"] < 0 and change["hit_rate"] > 0
                         and change["mean_delay"] < 0}
    out["settings"] = _settings_figures(settings)
    return out


def _equal_cost(history: Mapping[str, Sequence[float]], histories: Mapping[str, History], window: Split,
                trained: Trained, policy: str, settings: EvaluationSettings,
                fixed: Sequence[Tally]) -> list[dict[str, Any]]:
    def run(hub_interval: float) -> Tally:
        target = waiting_target(history, window, trained, policy, hub_interval)
        return run_policy(histories, window, trained, policy, replace(settings, first_interval=hub_interval), target)

    rows = []
    for interval, baseline in zip(settings.intervals, fixed, strict=True):
        budget, tally = cost_matched(run, baseline.fetches, interval)
        rows.append({
            "interval": interval, "fixed_cost": baseline.fetches, "fixed_mean_delay": round(baseline.mean_delay, 2),
            "policy_cost": tally.fetches, "policy_mean_delay": round(tally.mean_delay, 2),
            "policy_hit_rate": round(tally.hit_rate, 4), "fixed_hit_rate": round(baseline.hit_rate, 4),
            "hub_interval": round(budget, 2), "lower_delay": tally.mean_delay < baseline.mean_delay,
        })
    return rows


def _history_figures(history: Mapping[str, Sequence[float]], window: Split) -> dict[str, Any]:
    items = sum(len(t) for t in history.values())
    test_items = sum(1 for times in history.values() for t in times if window.train_end <= t < window.test_end)
    return {
        "keys": len(history), "items": items, "test_items": test_items,
        "train_start": window.train_start, "train_end": window.train_end, "test_end": window.test_end,
        "train_days": round((window.train_end - window.train_start) / DAY, 3),
        "test_days": round((window.test_end - window.train_end) / DAY, 3),
    }


def _model_figures(history: Mapping[str, Sequence[float]], window: Split, trained: Trained,
                   settings: EvaluationSettings) -> dict[str, Any]:
    holdout: dict[str, float] = {}
    for model_key, model in trained.models.items():
        folded = sorted(t for key, route in trained.routes.items() if route.model_key == model_key
                        for t in history[key])
        holdout[model_key] = r2_on_period(model, folded, window.train_end, window.test_end)
    per_model = [{"key": mk, "samples": m.samples, "r2_cv": round(m.r2_cv, 4), "r2_holdout": round(holdout[mk], 4)}
                 for mk, m in sorted(trained.models.items())]
    folded_keys = sum(1 for key, route in trained.routes.items() if route.model_key != key)
    return {
        "min_samples": settings.min_samples,
        "model_keys": len(trained.models),
        "keys_with_own_model": sum(1 for key, route in trained.routes.items() if route.model_key == key),
        "keys_folded": folded_keys,
        "keys_without_model": len(history) - len(trained.routes),
        "r2_cv_mean": round(statistics.fmean(m.r2_cv for m in trained.models.values()), 4) if holdout else None,
        "r2_holdout_mean": round(statistics.fmean(holdout.values()), 4) if holdout else None,
        "per_model": per_model,
    }


def _settings_figures(settings: EvaluationSettings) -> dict[str, Any]:
    return {
        "train_days": settings.train_days, "min_samples": settings.min_samples,
        "hub_interval": settings.hub_interval, "min_interval": settings.bounds.min_interval,
        "max_interval": settings.bounds.max_interval, "first_interval": settings.first_interval,
        "burst_sigmas": settings.bursts.sigmas, "burst_min_items": settings.bursts.min_items,
        "burst_half_life": settings.bursts.half_life, "burst_max_boost": settings.bursts.max_boost,
        "trees": settings.forest.trees, "min_samples_leaf": settings.forest.min_samples_leaf,
        "max_features": settings.forest.max_features, "rate_floor": settings.forest.rate_floor,
        "seed": settings.forest.seed,
    }
