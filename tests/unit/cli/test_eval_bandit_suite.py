"""``trawl eval bandit --suite``: the adaptive policy keeps up with the best fixed rule on every family.

Ten sets per family (the suite's first ten seeds) keep the test short; the documented figures
are of twenty.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.eval.bandit_suite import FAMILIES, run_suite
from cli.main import app

SEEDS = 10


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    return run_suite(seeds=SEEDS)


@pytest.mark.parametrize(("family", "split"), FAMILIES)
def test_recency_is_at_least_the_best_fixed_rule_on_every_family(suite: dict[str, Any], family: str,
                                                                  split: str) -> None:
    got = suite["families"][family]
    assert got["split"] == split
    assert got["recency_vs_family_rule"] >= 1.0, got  # against the one rule with the largest total there
    assert got["recency_vs_best_rule_per_set"]["mean"] >= 1.0, got  # against each set's best rule, on average


def test_the_families_are_split_into_tuning_and_held_out() -> None:
    assert {split for _, split in FAMILIES} == {"tuning", "held-out"}
    assert [kind for kind, split in FAMILIES if split == "held-out"] == ["mixed", "varied"]


def test_the_suite_command() -> None:
    result = CliRunner().invoke(app, ["eval", "bandit", "--suite", "--family", "mixed", "--seeds", "2", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert list(payload["families"]) == ["mixed"] and payload["families"]["mixed"]["sets"] == 2
    assert payload["parameters"] == {"recency_decay": 0.98, "recency_floor": 1.0}
