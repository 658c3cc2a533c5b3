"""``trawl eval bandit``: the JSON keys, the committed site sets, generation and bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app
from services.scheduler.bandits.replay import load_site_rewards
from services.scheduler.bandits.site_sets import generate

DATA = Path(__file__).resolve().parents[2] / "data" / "bandit"
KEYS = {
    "sites_file",
    "sites",
    "budget",
    "generated",
    "parameters",
    "policies",
    "ranking",
    "best_fixed_rule",
    "recency_vs_best_fixed_rule",
}


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["eval", "bandit", *args, "--json"])
    assert result.exit_code == 0, result.output
    payload: dict[str, Any] = json.loads(result.output)
    return payload


def test_the_institutes_rank_as_in_the_paper() -> None:
    got = run("--sites", str(DATA / "institutes-seed0.jsonl"), "--budget", "2000")
    assert set(got) == KEYS
    assert (got["sites"], got["budget"], got["generated"]) == (10, 2000, None)
    assert got["parameters"] == {
        "r1_explore_pages": 100,
        "r2_batch": 10,
        "r3_initial_pages": 10,
        "quantum_pages": 10,
        "recency_decay": 0.98,
        "recency_floor": 1.0,
    }
    reward = {name: p["reward"] for name, p in got["policies"].items()}
    assert reward["r2"] > reward["r3"] > reward["r1"]
    assert got["best_fixed_rule"] == "r2"
    assert got["recency_vs_best_fixed_rule"] == reward["recency"] / reward["r2"] >= 0.95
    assert got["ranking"] == sorted(reward, key=lambda name: -reward[name])
    assert all(p["pages"] == 2000 == sum(p["pages_by_site"].values()) for p in got["policies"].values())


def test_the_universities_rank_as_in_the_paper() -> None:
    got = run("--sites", str(DATA / "universities-seed0.jsonl"), "--budget", "2000")
    reward = {name: p["reward"] for name, p in got["policies"].items()}
    assert reward["r3"] > reward["r1"] > reward["r2"]
    assert got["best_fixed_rule"] == "r3" and got["recency_vs_best_fixed_rule"] >= 0.95


def test_generate_writes_the_site_set_first(tmp_path: Path) -> None:
    sites = tmp_path / "sites.jsonl"
    got = run("--generate", "universities", "--seed", "3", "--sites", str(sites), "--budget", "300", "--step", "5")
    assert got["generated"] == {"kind": "universities", "seed": 3}
    assert load_site_rewards(sites) == generate("universities", 3)
    assert got["parameters"]["r1_explore_pages"] == 15 and got["parameters"]["r2_batch"] == 5
    assert all(p["pages"] == 300 for p in got["policies"].values())


def test_the_table_and_the_errors(tmp_path: Path) -> None:
    table = CliRunner().invoke(app, ["eval", "bandit", "--sites", str(DATA / "institutes-seed0.jsonl")])
    assert table.exit_code == 0 and "recency" in table.output and "vs best fixed rule" in table.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"site": "a", "rewards": [1]}\n{"site": "b", "rewards": "many"}\n')
    failed = CliRunner().invoke(app, ["eval", "bandit", "--sites", str(bad)])
    assert failed.exit_code == 2 and "line 2" in failed.output
    missing = CliRunner().invoke(app, ["eval", "bandit", "--sites", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2
    kind = CliRunner().invoke(app, ["eval", "bandit", "--sites", str(bad), "--generate", "museums"])
    assert kind.exit_code == 2 and "institutes, universities" in kind.output
