"""Issue 8's bar, on histories of the simulated web's hubs (daily and weekly cycles, quiet nights and
weekends, per-hub shifts, bursts): 30 days of training, 7 of test, several generator seeds.

Against the median fixed interval the learned policy must have, at once, a hit rate at least 60%
higher, a cost at least 25% lower and a mean delay at least 25% lower; at the cost of each fixed
interval of the paper it must have the lower mean delay; the models' R2 must be in the paper's
range (0.6-0.9) or better. Figures are deterministic for a seed (the generator and the forests
are seeded).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from libs.simweb import build_web
from libs.simweb.history_export import history_config, hub_history
from services.scheduler.freshness.evaluation import EvaluationSettings, evaluate

SEEDS = (1, 2, 3, 4)


@cache
def history(seed: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for key, at in hub_history(build_web(history_config(seed, hubs=8, days=37))):
        out.setdefault(key, []).append(at.timestamp())
    return out


@cache
def figures(seed: int, equal_cost: bool = False) -> dict[str, Any]:
    policies = ("learned",) if equal_cost else ("learned", "estimator")
    return evaluate(history(seed), EvaluationSettings(equal_cost=equal_cost), policies)


@pytest.fixture(params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def result(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    yield figures(request.param)


def test_the_split_is_thirty_days_then_seven(result: dict[str, Any]) -> None:
    assert result["history"]["train_days"] == 30
    assert result["history"]["test_days"] == pytest.approx(7, abs=0.05)
    assert result["models"]["model_keys"] == result["history"]["keys"] == 8


def test_learned_policy_beats_the_median_fixed_interval_on_all_three_at_once(result: dict[str, Any]) -> None:
    change = result["policies"]["learned"]["vs_median"]
    assert change["hit_rate"] >= 0.60
    assert change["cost"] <= -0.25
    assert change["mean_delay"] <= -0.25
    assert result["policies"]["learned"]["unfetched"] <= 8  # at most an item per hub left at the very end


def test_r2_in_the_papers_range_or_better(result: dict[str, Any]) -> None:
    models = result["models"]
    assert models["r2_cv_mean"] >= 0.6 and models["r2_holdout_mean"] >= 0.6
    # a key whose test week holds a burst scores lower on it (the weakness seed 001 states); most do not
    assert statistics.median(m["r2_cv"] for m in models["per_model"]) >= 0.6
    assert statistics.median(m["r2_holdout"] for m in models["per_model"]) >= 0.6


def test_the_model_is_what_makes_the_difference(result: dict[str, Any]) -> None:
    learned, estimator = result["policies"]["learned"], result["policies"]["estimator"]
    assert learned["mean_delay"] < 0.75 * estimator["mean_delay"]
    assert learned["hit_rate"] > estimator["hit_rate"]


def test_at_equal_cost_the_learned_policy_has_the_lower_mean_delay_at_every_fixed_interval() -> None:
    rows = figures(SEEDS[0], equal_cost=True)["policies"]["learned"]["equal_cost"]
    assert [r["interval"] for r in rows] == [10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200]
    for row in rows:
        assert 0.98 * row["fixed_cost"] <= row["policy_cost"] <= row["fixed_cost"], row
        assert row["policy_mean_delay"] < row["fixed_mean_delay"], row
