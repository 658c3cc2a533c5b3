"""``trawl eval partition``: the JSON keys, the committed graph, generation and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.eval.partition import crawler_counts
from cli.main import app

GRAPH = Path(__file__).resolve().parents[2] / "data" / "partition" / "site-seed0.txt"
HOME = "http://site.example/"
KEYS = {
    "graph_file",
    "home",
    "generated",
    "pages",
    "links",
    "paths",
    "key_paths",
    "key_path_share",
    "same_path_link_share",
    "tail",
    "eps",
    "delta",
    "results",
}
RESULT_KEYS = {
    "crawlers",
    "overlap",
    "coverage",
    "acceleration",
    "composite",
    "downloaded",
    "distinct",
    "busiest",
    "fetched_per_crawler",
}


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["eval", "partition", *args, "--json"])
    assert result.exit_code == 0, result.output
    payload: dict[str, Any] = json.loads(result.output)
    return payload


def test_the_committed_graph_from_1_to_10_crawlers() -> None:
    got = run("--graph", str(GRAPH), "--home", HOME, "--crawlers", "1..10")
    assert set(got) == KEYS
    assert (got["eps"], got["delta"], got["tail"], got["generated"]) == (0.8, 0.2, "hashed", None)
    assert [r["crawlers"] for r in got["results"]] == list(range(1, 11))
    assert all(set(r) == RESULT_KEYS for r in got["results"])
    one, two, three = got["results"][:3]
    assert (one["overlap"], one["coverage"], one["acceleration"]) == (0.0, 1.0, 1.0)
    assert one["composite"] == pytest.approx(0.447, abs=1e-3)
    assert two["acceleration"] >= 1.8 and two["coverage"] >= 0.95 and two["overlap"] <= 0.05
    assert three["acceleration"] >= 2.6 and three["coverage"] >= 0.95
    assert len(three["fetched_per_crawler"]) == 3 and max(three["fetched_per_crawler"]) == three["busiest"]
    assert 0.72 <= got["same_path_link_share"] <= 0.76
    assert got["key_path_share"] == got["key_paths"] / got["paths"]


def test_the_paper_s_shared_tail_overlaps_more() -> None:
    hashed = run("--graph", str(GRAPH), "--home", HOME, "--crawlers", "2")["results"][0]
    shared = run("--graph", str(GRAPH), "--home", HOME, "--crawlers", "2", "--tail", "shared")["results"][0]
    assert shared["overlap"] > hashed["overlap"] and shared["acceleration"] < hashed["acceleration"]


def test_generate_writes_the_graph_and_defaults_the_home_page(tmp_path: Path) -> None:
    graph = tmp_path / "g.txt"
    got = run("--generate", "--seed", "0", "--graph", str(graph), "--crawlers", "2,3")
    assert graph.read_text() == GRAPH.read_text()
    assert got["home"] == HOME and got["generated"] == {"seed": 0}
    assert [r["crawlers"] for r in got["results"]] == [2, 3]


def test_crawler_counts() -> None:
    assert crawler_counts("1..3") == [1, 2, 3]
    assert crawler_counts("4") == [4]
    assert crawler_counts("1, 2,5") == [1, 2, 5]
    for bad in ("0..3", "x", "", "2..1"):
        with pytest.raises(ValueError):
            crawler_counts(bad)


def test_bad_input_is_reported(tmp_path: Path) -> None:
    def fails(*args: str) -> str:
        result = CliRunner().invoke(app, ["eval", "partition", *args])
        assert result.exit_code == 2, result.output
        return result.output

    assert "--home is required" in fails("--graph", str(GRAPH))
    assert "not in the graph" in fails("--graph", str(GRAPH), "--home", "http://other.example/")
    assert "--crawlers" in fails("--graph", str(GRAPH), "--home", HOME, "--crawlers", "zero")
    assert "--tail" in fails("--graph", str(GRAPH), "--home", HOME, "--tail", "random")
    broken = tmp_path / "broken.txt"
    broken.write_text("a b c\n")
    assert "line 1" in fails("--graph", str(broken), "--home", "a")
    table = CliRunner().invoke(app, ["eval", "partition", "--graph", str(GRAPH), "--home", HOME, "--crawlers", "2"])
    assert table.exit_code == 0 and "acceleration" in table.output
