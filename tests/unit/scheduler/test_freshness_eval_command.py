"""``trawl eval freshness``: the table, the JSON object and its documented keys, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

HISTORY = Path(__file__).resolve().parents[2] / "data" / "freshness" / "two_hubs_32_days.csv"
DOCUMENTED = {"history", "models", "fixed", "median_fixed", "policies", "settings", "seconds"}


def test_json_has_every_figure() -> None:
    result = CliRunner().invoke(app, ["eval", "freshness", "--history", str(HISTORY), "--policy", "all",
                                      "--min-samples", "500", "--no-equal-cost", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert set(figures) == DOCUMENTED
    assert [f["interval"] for f in figures["fixed"]] == [10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200]
    for row in figures["fixed"]:
        assert {"cost", "hits", "hit_rate", "mean_delay", "delay_variance", "items", "unfetched"} <= set(row)
    assert set(figures["policies"]) == {"learned", "estimator"}
    learned = figures["policies"]["learned"]
    assert set(learned["vs_median"]) == {"cost", "hit_rate", "mean_delay", "delay_variance"}
    assert learned["cost"] < figures["median_fixed"]["cost"]
    assert figures["models"]["model_keys"] == 2 and figures["models"]["r2_cv_mean"] > 0.4
    assert figures["history"]["train_days"] == 30 and figures["history"]["file"] == str(HISTORY)


def test_table_and_equal_cost(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "freshness", "--history", str(HISTORY), "--train-days", "31",
                                      "--min-samples", "500"])
    assert result.exit_code == 0, result.output
    assert "median of fixed" in result.output and "learned" in result.output
    assert "at the cost of each fixed interval" in result.output


def said(output: str) -> str:
    """The error text without the box around it."""
    return " ".join(output.replace("│", " ").split())


def test_bad_input_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("url,when\nx,y\n")
    result = CliRunner().invoke(app, ["eval", "freshness", "--history", str(bad)])
    assert result.exit_code == 2 and "key,published_at" in said(result.output)
    result = CliRunner().invoke(app, ["eval", "freshness", "--history", str(HISTORY), "--policy", "oracle"])
    assert result.exit_code == 2 and "--policy" in said(result.output)
    result = CliRunner().invoke(app, ["eval", "freshness", "--history", str(HISTORY), "--train-days", "40"])
    assert result.exit_code == 2 and "nothing to replay" in said(result.output)
