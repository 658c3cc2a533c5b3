"""``trawl eval ordering``: graph files, the policies, the JSON keys, and AOPIC's lead on a web-like graph."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.eval.ordering import MARKS, evaluate
from cli.eval.ordering_crawl import POLICIES
from cli.eval.ordering_graph import CrawlGraph, GraphFormatError, generate, pagerank, read_graph
from cli.main import app

KEYS = {"graph", "marks", "damping", "partitions", "passes", "pagerank_share", "ratio_to_omniscient", "spearman",
        "conservation", "settings", "generated"}


def write(tmp_path: Path, edges: str, seeds: str) -> tuple[Path, Path]:
    graph, seed_file = tmp_path / "graph.txt", tmp_path / "seeds.txt"
    graph.write_text(edges)
    seed_file.write_text(seeds)
    return graph, seed_file


def test_a_graph_file_has_one_edge_per_line_of_urls_or_integers(tmp_path: Path) -> None:
    graph = read_graph(*write(tmp_path, "# a comment\n1 2\n1 2\n2 3\n3 1\n3 3\n\n4 1\n", "1\n"))
    assert graph.labels == ["1", "2", "3", "4"]
    assert graph.out == [[1], [2], [0], [0]]  # repeated edges and self-links count once
    assert graph.seeds == [0] and graph.edges == 4 and graph.reachable() == 3


@pytest.mark.parametrize(("edges", "seeds", "message"), [
    ("1 2 3\n", "1\n", "expected 'source target'"),
    ("1 2\n", "9\n", "not a node"),
    ("1 2\n", "\n", "no seeds"),
])
def test_bad_graph_files_are_refused(tmp_path: Path, edges: str, seeds: str, message: str) -> None:
    with pytest.raises(GraphFormatError, match=message):
        read_graph(*write(tmp_path, edges, seeds))


def test_pagerank_matches_the_simulated_webs_power_iteration() -> None:
    from libs.simweb.pagerank import pagerank as reference

    graph = CrawlGraph(["a", "b", "c", "d"], [[1, 2], [2], [0], []], [0])
    ours = pagerank(graph)
    theirs = reference({"a": ["b", "c"], "b": ["c"], "c": ["a"], "d": []})
    assert ours == pytest.approx(np.array([theirs[k] for k in "abcd"]), abs=1e-9)


def test_every_policy_crawls_each_reachable_page_once_and_omniscient_goes_by_pagerank() -> None:
    graph, _ = generate(3000, 4, 5)
    result = evaluate(graph, POLICIES, seed=4)
    assert set(result["pagerank_share"]) == set(POLICIES)
    for name, shares in result["pagerank_share"].items():
        assert shares == sorted(shares), name
        assert all(0 < s <= 1 for s in shares)
    assert result["ratio_to_omniscient"]["omniscient"] == [1.0] * len(MARKS)
    for name in ("aopic", "opic"):
        spearman = result["spearman"][name]
        assert spearman["crawled"] == graph.reachable()
        conservation = result["conservation"][name]
        assert math.isclose(conservation["accounted"], conservation["total"], rel_tol=1e-9)


def test_aopic_leads_plain_opic_and_breadth_first_on_a_web_like_graph() -> None:
    graph, _ = generate(10_000, 1, 10)
    result = evaluate(graph, ("aopic", "opic", "breadth_first"), seed=1)
    ratios = result["ratio_to_omniscient"]
    for mark in range(len(MARKS)):
        assert ratios["aopic"][mark] > ratios["opic"][mark] > ratios["breadth_first"][mark], mark


def test_partitions_split_the_state_without_losing_cash() -> None:
    graph, _ = generate(3000, 2, 5)
    result = evaluate(graph, ("aopic",), partitions=4, seed=2)
    conservation = result["conservation"]["aopic"]
    assert math.isclose(conservation["accounted"], 100.0, rel_tol=1e-9)
    assert result["partitions"] == 4


def test_further_passes_revisit_every_page_and_conserve_cash() -> None:
    graph, _ = generate(3000, 5, 5)
    result = evaluate(graph, ("aopic",), seed=5, passes=3)
    spearman = result["spearman"]["aopic"]
    assert result["passes"] == 3 and len(spearman["after_passes"]) == 3
    assert spearman["after_passes"][0] == spearman["all_crawled"]
    assert spearman["after_passes"][2] > spearman["after_passes"][0]  # revisits pass on the cash left behind
    assert math.isclose(result["conservation"]["aopic"]["accounted"], 100.0, rel_tol=1e-9)


def test_the_command_prints_the_documented_json(tmp_path: Path) -> None:
    saved_graph, saved_seeds = tmp_path / "g.txt", tmp_path / "s.txt"
    runner = CliRunner()
    out = runner.invoke(app, ["eval", "ordering", "--generate", "2000", "--seed", "3", "--save-graph",
                              str(saved_graph), "--save-seeds", str(saved_seeds), "--json"])
    assert out.exit_code == 0, out.output
    payload: dict[str, Any] = json.loads(out.output)
    assert set(payload) == KEYS
    assert payload["generated"] == {"pages": 2000, "seed": 3, "seed_hosts": 10}
    assert set(payload["spearman"]["aopic"]) == {"at_marks", "all_crawled", "crawled", "after_passes"}
    assert payload["spearman"]["aopic"]["after_passes"] == [payload["spearman"]["aopic"]["all_crawled"]]

    again = runner.invoke(app, ["eval", "ordering", "--graph", str(saved_graph), "--seeds", str(saved_seeds),
                                "--seed", "3", "--json"])
    assert again.exit_code == 0, again.output
    reread = json.loads(again.output)
    assert reread["graph"]["nodes"] <= payload["graph"]["nodes"]  # pages without any link are not in an edge file
    assert reread["pagerank_share"]["omniscient"][-1] == pytest.approx(payload["pagerank_share"]["omniscient"][-1],
                                                                        rel=0.05)


def test_the_command_refuses_missing_input() -> None:
    out = CliRunner().invoke(app, ["eval", "ordering", "--json"])
    assert out.exit_code == 2
    out = CliRunner().invoke(app, ["eval", "ordering", "--generate", "100", "--policies", "best"])
    assert out.exit_code == 2
