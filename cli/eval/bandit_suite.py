"""``trawl eval bandit --suite``: every site policy over families of site sets, tuned on some, held out on others.

Families (``services/scheduler/bandits/site_sets.py``), ``SEEDS`` sets of ten sites each:

- tuning: ``institutes`` and ``universities`` (the paper's two kinds);
- held-out: ``mixed`` (both kinds in one set, the paper's third sample) and ``varied`` (every
  site's shape drawn anew over wider ranges: size, links, links per page, tail, depth, silent
  first pages, catalogue pages).

The adaptive policy (``recency``) is compared with the best fixed rule (``r1``, ``r2``, ``r3``)
two ways: per set (its reward over that set's best rule, averaged over the family's sets, and
the worst set), and per family (its total over the family against the one fixed rule with the
largest total there). ``--tune`` also searches the recency policy's decay and floor on the
tuning families (the default is the setting whose smallest mean ratio over the tuning families
is largest, ties to the larger worst set) and shows where the held-out families stand at it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.scheduler.bandits.policies import (
    FIXED_RULES,
    POLICY_NAMES,
    RECENCY_DECAY,
    RECENCY_FLOOR,
    RecencyGreedy,
    make_policy,
)
from services.scheduler.bandits.replay import SiteRewards, replay
from services.scheduler.bandits.site_sets import generate

SEEDS = 20
FAMILIES: tuple[tuple[str, str], ...] = (
    ("institutes", "tuning"), ("universities", "tuning"), ("mixed", "held-out"), ("varied", "held-out"))
DECAYS = (0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
FLOORS = (0.3, 0.5, 0.7, 1.0, 1.4, 2.0)


@dataclass(frozen=True)
class SetResult:
    seed: int
    rewards: dict[str, float]  # per policy

    @property
    def best_fixed(self) -> float:
        return max(self.rewards[name] for name in FIXED_RULES)


def family_sets(kind: str, seeds: int) -> list[list[SiteRewards]]:
    return [generate(kind, seed) for seed in range(seeds)]


def run_sets(sets: Sequence[Sequence[SiteRewards]], budget: int, step: int) -> list[SetResult]:
    """Every policy on every set."""
    out = []
    for seed, sites in enumerate(sets):
        rewards = {}
        for name in POLICY_NAMES:
            policy = make_policy(name, budget=budget, sites=len(sites), step=step)
            rewards[name] = replay(policy, sites, budget).reward
        out.append(SetResult(seed, rewards))
    return out


def summary(results: Sequence[SetResult]) -> dict[str, Any]:
    """Per-set and per-family comparison of ``recency`` with the fixed rules."""
    ratios = [r.rewards["recency"] / r.best_fixed for r in results if r.best_fixed > 0]
    totals = {name: sum(r.rewards[name] for r in results) for name in POLICY_NAMES}
    best_rule = max(FIXED_RULES, key=lambda name: (totals[name], -FIXED_RULES.index(name)))
    return {
        "sets": len(results),
        "mean_reward": {name: round(totals[name] / len(results), 1) for name in POLICY_NAMES},
        "best_fixed_rule_of_family": best_rule,
        "recency_vs_family_rule": round(totals["recency"] / totals[best_rule], 4) if totals[best_rule] else None,
        "recency_vs_best_rule_per_set": {
            "mean": round(statistics.fmean(ratios), 4), "worst": round(min(ratios), 4),
            "at_least_equal": sum(r >= 1.0 for r in ratios),
        },
        "best_rule_count": {name: sum(1 for r in results if r.rewards[name] == r.best_fixed) for name in FIXED_RULES},
    }


def tune(budget: int, step: int, seeds: int) -> dict[str, Any]:
    """The recency grid over the tuning families, and the held-out families at each point."""
    sets = {kind: family_sets(kind, seeds) for kind, _ in FAMILIES}
    base = {kind: run_sets(sets[kind], budget, step) for kind, _ in FAMILIES}
    rows: list[dict[str, Any]] = []
    for decay in DECAYS:
        for floor in FLOORS:
            per = {}
            for kind, _split in FAMILIES:
                results = [SetResult(r.seed, {**r.rewards, "recency": replay(RecencyGreedy(decay, floor), sites,
                                                                           budget).reward})
                           for r, sites in zip(base[kind], sets[kind], strict=True)]
                per[kind] = summary(results)["recency_vs_best_rule_per_set"]
            tuning = [per[kind] for kind, split in FAMILIES if split == "tuning"]
            rows.append({"decay": decay, "floor": floor, "families": per,
                         "tuning_score": [min(t["mean"] for t in tuning), min(t["worst"] for t in tuning)]})
    chosen = max(rows, key=lambda r: (r["tuning_score"][0], r["tuning_score"][1]))
    return {"grid": rows, "chosen": {"decay": chosen["decay"], "floor": chosen["floor"]},
            "defaults": {"decay": RECENCY_DECAY, "floor": RECENCY_FLOOR}}


def run_suite(budget: int = 2000, step: int = 10, seeds: int = SEEDS,
              kinds: Sequence[str] | None = None) -> dict[str, Any]:
    families = {}
    for kind, split in FAMILIES:
        if kinds and kind not in kinds:
            continue
        results = run_sets(family_sets(kind, seeds), budget, step)
        families[kind] = {"split": split, "command": f"trawl eval bandit --suite --family {kind}", **summary(results)}
    return {"budget": budget, "step": step, "seeds": seeds,
            "parameters": {"recency_decay": RECENCY_DECAY, "recency_floor": RECENCY_FLOOR}, "families": families}
