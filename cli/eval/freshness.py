"""``trawl eval freshness --history FILE``: learned revisit scheduling against the fixed intervals of seed 001.

FILE is CSV with a header ``key,published_at`` (ISO 8601 UTC), one row per new item, the key
being the item's host and first path segment (``news.example/sport``). The first
``--train-days`` train the models; the rest is replayed with a simulated clock through the
scheduler's own planner (``services.scheduler.freshness``), each key standing for one hub
page. The policy's settings default to the service's (``TRAWL_FRESHNESS_*``).
``python -m libs.simweb.history_export`` writes such files from the simulated web's hubs.
``--suite`` runs every history family of ``freshness_histories`` instead (``freshness_suite``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import typer

from cli.output import console, emit
from libs.common.settings import load_settings
from services.scheduler.freshness.history import HistoryFileError, read_history_csv

# The learning stack (scikit-learn) loads only when this command runs, so that every other
# `trawl` command starts fast.
POLICIES = ("learned", "estimator")


def _minutes(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 60 else f"{seconds / 60:g} min" if seconds < 3600 else f"{seconds / 3600:g} h"


def run(
    history: Path | None = typer.Option(None, "--history", exists=True, dir_okay=False,
                                        help="key,published_at CSV (gzip if it ends in .gz)."),
    train_days: float = typer.Option(30.0, "--train-days", help="Days of the history the models learn from."),
    policy: str = typer.Option("learned", "--policy", help="learned, estimator (model-free), or all."),
    hub_interval: float | None = typer.Option(None, help="Mean revisit interval per hub, s: the fetch budget."),
    min_samples: int | None = typer.Option(None, help="Items a key needs for its own model."),
    equal_cost: bool = typer.Option(True, "--equal-cost/--no-equal-cost",
                                    help="Also tune the policy to the cost of each fixed interval."),
    suite: bool = typer.Option(False, "--suite", help="Every history family instead of one file."),
    family: list[str] = typer.Option([], "--family", help="With --suite: only these families (repeatable)."),
    seed: list[int] = typer.Option([], "--seed", help="With --suite: these seeds of the generated families."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Cost, hit rate and delay of the learned policy and of fixed intervals, and the models' R2."""
    from services.scheduler.freshness import evaluation
    from services.scheduler.freshness.evaluation import EvaluationSettings, evaluate
    from services.scheduler.freshness.settings import FreshnessSettings

    assert evaluation.POLICIES == POLICIES
    chosen = POLICIES if policy == "all" else (policy,)
    if any(p not in POLICIES for p in chosen):
        raise typer.BadParameter(f"--policy must be one of {', '.join(POLICIES)} or all")
    overrides: dict[str, Any] = {}
    if hub_interval is not None:
        overrides["hub_interval"] = hub_interval
    if min_samples is not None:
        overrides["min_samples"] = min_samples
    service = load_settings(FreshnessSettings, os.environ, **overrides)
    settings = EvaluationSettings(
        train_days=train_days, min_samples=service.min_samples, hub_interval=service.hub_interval,
        bounds=service.bounds, first_interval=service.hub_interval, bursts=service.bursts,
        forest=service.forest, equal_cost=equal_cost,
    )
    if suite:
        _suite(settings, family, seed, as_json)
        return
    if history is None:
        raise typer.BadParameter("--history is required (or --suite)")
    try:
        items = read_history_csv(history)
    except HistoryFileError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if not items:
        raise typer.BadParameter(f"{history} has no items")
    started = time.perf_counter()
    try:
        result = evaluate(items, settings, chosen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    result["history"]["file"] = str(history)
    result["seconds"] = round(time.perf_counter() - started, 2)
    if as_json:
        emit(True, result, "", [], [])
        return
    _print(result)


def _row(name: str, f: dict[str, Any]) -> list[Any]:
    return [name, f["cost"], f"{f['hit_rate']:.3f}", f"{f['mean_delay']:.1f}", f"{f['delay_variance']:.4g}"]


def _print(result: dict[str, Any]) -> None:
    h, m = result["history"], result["models"]
    rows = [_row(_minutes(f["interval"]), f) for f in result["fixed"]]
    median = result["median_fixed"]
    rows.append(["median of fixed", f"{median['cost']:g}", f"{median['hit_rate']:.3f}",
                 f"{median['mean_delay']:.1f}", f"{median['delay_variance']:.4g}"])
    for name, p in result["policies"].items():
        rows.append(_row(name, p))
    emit(False, {}, f"freshness: {h['keys']} keys, {h['test_items']} items in {h['test_days']:g} test days "
                    f"after {h['train_days']:g} training days", ["schedule", "cost", "hit rate",
                                                                  "mean delay (s)", "delay variance"], rows)
    for name, p in result["policies"].items():
        v = p["vs_median"]
        console.print(f"{name} vs the median fixed interval: cost {v['cost']:+.1%}, hit rate {v['hit_rate']:+.1%}, "
                      f"mean delay {v['mean_delay']:+.1%} (budget: one fetch per {p['hub_interval']:g} s per hub)")
        if "equal_cost" in p:
            emit(False, {}, f"{name} at the cost of each fixed interval",
                 ["interval", "cost (fixed / policy)", "mean delay (fixed / policy)", "hit rate (fixed / policy)",
                  "lower delay"],
                 [[_minutes(r["interval"]), f"{r['fixed_cost']} / {r['policy_cost']}",
                   f"{r['fixed_mean_delay']:.1f} / {r['policy_mean_delay']:.1f}",
                   f"{r['fixed_hit_rate']:.3f} / {r['policy_hit_rate']:.3f}", "yes" if r["lower_delay"] else "NO"]
                  for r in p["equal_cost"]])
    console.print(f"models: {m['model_keys']} ({m['keys_with_own_model']} keys with their own, {m['keys_folded']} "
                  f"folded into their host's, {m['keys_without_model']} without); R2 cross-validated "
                  f"{m['r2_cv_mean']}, on the test days {m['r2_holdout_mean']}; {result['seconds']} s")


def _suite(settings: Any, families: list[str], seeds: list[int], as_json: bool) -> None:
    from cli.eval.freshness_histories import FAMILIES
    from cli.eval.freshness_suite import run_suite

    known = [f.name for f in FAMILIES]
    if any(f not in known for f in families):
        raise typer.BadParameter(f"--family must be among {', '.join(known)}")
    started = time.perf_counter()
    payload = run_suite(settings, families or None, seeds or None)
    payload["seconds"] = round(time.perf_counter() - started, 1)

    def three(v: dict[str, float]) -> str:
        return f"{v['hit_rate']:+.0%} / {v['cost']:+.0%} / {v['mean_delay']:+.0%}"

    rows = [[r["history"], r["split"], f"{r['r2_cv_mean']}", three(r["learned"]), three(r["estimator"]),
             three(r["oracle"]), "yes" if r["learned_meets_targets"] else "NO",
             "yes" if r["learned_vs_estimator"]["never_worse"] else "NO"] for r in payload["histories"]]
    emit(as_json, payload, f"freshness suite, budget one fetch per {settings.hub_interval:g} s per hub: hit rate /"
                           " cost / mean delay against the median fixed interval",
         ["history", "split", "R2 cv", "learned", "estimator", "oracle", "targets met", "never below estimator"],
         rows)


def register(app: typer.Typer) -> None:
    app.command("freshness")(run)
