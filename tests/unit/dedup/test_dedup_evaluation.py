"""``trawl eval dedup`` on pairs files: figures, JSON keys, HTML through the extractor."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from bench.dedup_pairs import generate, write
from cli.eval.dedup import Tally
from cli.main import app

REPO = Path(__file__).resolve().parents[3]
PAIRS = REPO / "tests" / "data" / "dedup" / "pairs.jsonl.gz"
KEYS = {"pairs", "duplicates", "threshold", "shingle_width", "permutations", "bands", "rows", "precision", "recall",
        "f1", "true_positives", "false_positives", "false_negatives", "true_negatives", "simhash_baseline",
        "categories", "html_documents", "seconds"}


def _run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["eval", "dedup", *args, "--json"])
    assert result.exit_code == 0, result.output
    payload: dict[str, object] = json.loads(result.output)
    return payload


def test_tally_figures() -> None:
    tally = Tally()
    for predicted, actual in [(True, True), (True, True), (True, False), (False, True), (False, False)]:
        tally.add(predicted, actual)
    assert (tally.precision, tally.recall) == (2 / 3, 2 / 3)
    assert abs(tally.f1 - 2 / 3) < 1e-12
    assert Tally().f1 == 0.0


def test_the_committed_set_has_every_category_and_enough_pairs() -> None:
    with gzip.open(PAIRS, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    assert len(rows) >= 2000
    assert {row["category"] for row in rows} == {row["category"] for row in generate(6, 0.01)}
    assert 0.4 < sum(row["duplicate"] for row in rows) / len(rows) < 0.6


def test_a_small_generated_set_is_judged_with_its_keys(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl.gz"
    write(generate(seed=1, scale=0.05), pairs)
    result = _run("--pairs", str(pairs))
    assert set(result) == KEYS
    assert result["precision"] == 1.0 and float(result["recall"]) >= 0.8  # type: ignore[arg-type]
    assert int(result["html_documents"]) > 0  # type: ignore[call-overload]
    assert _run("--pairs", str(pairs), "--threshold", "1.0")["recall"] < result["recall"]  # type: ignore[operator]


def test_plain_json_lines_and_a_limit(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    text = "one paragraph of words that says enough to make more than eleven word shingles here"
    pairs.write_text("\n".join(json.dumps(row) for row in [
        {"a": text, "b": text + " indeed", "duplicate": True},
        {"a": text, "b": "something else entirely, with other words in another order", "duplicate": False},
        {"a": "x", "b": "y", "duplicate": False},
    ]) + "\n")
    result = _run("--pairs", str(pairs), "--limit", "2")
    assert (result["pairs"], result["true_positives"], result["true_negatives"]) == (2, 1, 1)
    assert result["categories"] == {}
