"""``trawl eval freshness --suite``: the learned policy, the estimator and the oracle on every history family.

Each history of each family (``freshness_histories``) is evaluated as ``trawl eval freshness
--policy all`` evaluates one file, with the service's settings, plus the oracle (the same
rule on each key's weekly profile of the whole history, test days included, at the learned
policy's cost). A row says whether the learned policy meets the targets against the median
fixed interval (hit rate at least +60 %, cost and mean delay at least 25 % lower, at once) and
whether it is at least as good as the model-free estimator: tuned to spend no more than the
estimator spent, its hit rate must be no lower and its mean delay no higher. Where the targets
are missed, the oracle's figures say whether a schedule planned from the best hour-of-week
profile could meet them there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cli.eval.freshness_histories import HistoryCase, cases, family
from services.scheduler.freshness.evaluation import EvaluationSettings, evaluate

TARGETS = {"hit_rate": 0.60, "cost": -0.25, "mean_delay": -0.25}


def meets_targets(change: dict[str, float]) -> bool:
    return (change["hit_rate"] >= TARGETS["hit_rate"] and change["cost"] <= TARGETS["cost"]
            and change["mean_delay"] <= TARGETS["mean_delay"])


def margin(change: dict[str, float]) -> float:
    """How far the three targets are met, in points: the smallest of the three margins (negative: missed)."""
    return round(100 * min(change["hit_rate"] - TARGETS["hit_rate"], TARGETS["cost"] - change["cost"],
                           TARGETS["mean_delay"] - change["mean_delay"]), 2)


def versus_estimator(learned: dict[str, Any], estimator: dict[str, Any]) -> dict[str, Any]:
    """The learned policy tuned to the estimator's cost (or just under) against the estimator."""
    matched = learned["at_estimator_cost"]
    return {
        "cost": matched["cost"], "hit_rate": matched["hit_rate"], "mean_delay": matched["mean_delay"],
        "estimator": {"cost": estimator["cost"], "hit_rate": estimator["hit_rate"],
                      "mean_delay": estimator["mean_delay"]},
        "never_worse": matched["cost"] <= estimator["cost"] and matched["hit_rate"] >= estimator["hit_rate"]
        and matched["mean_delay"] <= estimator["mean_delay"],
    }


def run_case(case: HistoryCase, settings: EvaluationSettings) -> dict[str, Any]:
    started = time.perf_counter()
    result = evaluate(case.history, replace(settings, train_days=case.train_days, min_samples=case.min_samples,
                                            equal_cost=False, oracle=True), ("learned", "estimator"))
    learned, estimator = result["policies"]["learned"], result["policies"]["estimator"]
    f = family(case.family)
    return {
        "family": case.family, "history": case.name, "split": f.split, "command": f.command,
        "keys": result["history"]["keys"], "test_items": result["history"]["test_items"],
        "train_days": result["history"]["train_days"], "test_days": result["history"]["test_days"],
        "r2_cv_mean": result["models"]["r2_cv_mean"], "r2_holdout_mean": result["models"]["r2_holdout_mean"],
        "models": result["models"]["model_keys"], "keys_without_model": result["models"]["keys_without_model"],
        "median_fixed": result["median_fixed"],
        "learned": learned["vs_median"], "estimator": estimator["vs_median"],
        "oracle": result["oracle"]["vs_median"],
        "absolute": {name: {m: p[m] for m in ("cost", "hit_rate", "mean_delay")}
                     for name, p in (("learned", learned), ("estimator", estimator), ("oracle", result["oracle"]))},
        "learned_meets_targets": meets_targets(learned["vs_median"]),
        "learned_margin": margin(learned["vs_median"]),
        "oracle_meets_targets": meets_targets(result["oracle"]["vs_median"]),
        "oracle_margin": margin(result["oracle"]["vs_median"]),
        "learned_vs_estimator": versus_estimator(learned, estimator),
        "seconds": round(time.perf_counter() - started, 1),
    }


def run_suite(settings: EvaluationSettings, families: Sequence[str] | None = None,
              seeds: Sequence[int] | None = None) -> dict[str, Any]:
    rows = [run_case(case, settings) for case in cases(families, seeds)]
    return {"targets": TARGETS, "hub_interval": settings.hub_interval, "histories": rows}
