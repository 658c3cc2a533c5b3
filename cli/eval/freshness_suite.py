"""``trawl eval freshness --suite``: the learned policy, the estimator and the oracle on every history family.

Each history of each family (``freshness_histories``) is evaluated as ``trawl eval freshness
--policy all`` evaluates one file, with the service's settings, plus the oracle (the same
rule on the weekly profile of the whole history, test days included). A row says whether the
learned policy meets the targets against the median fixed interval (hit rate at least +60%,
cost and mean delay at least 25% lower, at once) and whether it is at least as good as the
model-free estimator on all three: tuned to spend no more than the estimator spent, its hit
rate must be no lower and its mean delay no higher (at the same budget the two spend within
about 1% of each other: the budget is calibrated on the training days, ``calibration``).
Where the targets are missed, the oracle's figures say whether a schedule planned from the
best weekly profile could meet them there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cli.eval.freshness_histories import FAMILIES, HistoryCase, cases
from services.scheduler.freshness.evaluation import EvaluationSettings, evaluate

TARGETS = {"hit_rate": 0.60, "cost": -0.25, "mean_delay": -0.25}
COST_TOLERANCE = 0.01  # the learned policy's cost may exceed the estimator's by this share (same budget)


def meets_targets(change: dict[str, float]) -> bool:
    return (change["hit_rate"] >= TARGETS["hit_rate"] and change["cost"] <= TARGETS["cost"]
            and change["mean_delay"] <= TARGETS["mean_delay"])


def versus_estimator(learned: dict[str, Any], estimator: dict[str, Any]) -> dict[str, Any]:
    """The learned policy against the estimator: at the same budget, and tuned to the estimator's cost."""
    cost = learned["cost"] / estimator["cost"] - 1.0 if estimator["cost"] else 0.0
    delay = learned["mean_delay"] / estimator["mean_delay"] - 1.0 if estimator["mean_delay"] else 0.0
    matched = learned["at_estimator_cost"]
    return {
        "cost": round(cost, 4),
        "hit_rate": round(learned["hit_rate"] - estimator["hit_rate"], 4),
        "mean_delay": round(delay, 4),
        "same_budget_never_worse": cost <= COST_TOLERANCE and learned["hit_rate"] >= estimator["hit_rate"]
        and learned["mean_delay"] <= estimator["mean_delay"],
        "at_estimator_cost": {"cost": matched["cost"], "hit_rate": matched["hit_rate"],
                              "mean_delay": matched["mean_delay"]},
        "never_worse": matched["cost"] <= estimator["cost"] and matched["hit_rate"] >= estimator["hit_rate"]
        and matched["mean_delay"] <= estimator["mean_delay"],
    }


def run_case(case: HistoryCase, settings: EvaluationSettings) -> dict[str, Any]:
    started = time.perf_counter()
    result = evaluate(case.history, replace(settings, train_days=case.train_days, min_samples=case.min_samples,
                                            equal_cost=False, oracle=True), ("learned", "estimator"))
    learned, estimator = result["policies"]["learned"], result["policies"]["estimator"]
    split = next(f.split for f in FAMILIES if f.name == case.family)
    command = next(f.command for f in FAMILIES if f.name == case.family)
    return {
        "family": case.family, "history": case.name, "split": split, "command": command,
        "keys": result["history"]["keys"], "test_items": result["history"]["test_items"],
        "train_days": result["history"]["train_days"], "test_days": result["history"]["test_days"],
        "r2_cv_mean": result["models"]["r2_cv_mean"], "skill_mean": result["models"]["skill_mean"],
        "models": result["models"]["model_keys"], "models_dropped": len(result["models"]["dropped"]),
        "median_fixed": result["median_fixed"],
        "learned": learned["vs_median"], "estimator": estimator["vs_median"],
        "oracle": result["oracle"]["vs_median"],
        "learned_meets_targets": meets_targets(learned["vs_median"]),
        "oracle_meets_targets": meets_targets(result["oracle"]["vs_median"]),
        "learned_vs_estimator": versus_estimator(learned, estimator),
        "seconds": round(time.perf_counter() - started, 1),
    }


def run_suite(settings: EvaluationSettings, families: Sequence[str] | None = None,
              seeds: Sequence[int] | None = None) -> dict[str, Any]:
    rows = [run_case(case, settings) for case in cases(families, seeds)]
    return {"targets": TARGETS, "hub_interval": settings.hub_interval, "histories": rows}
