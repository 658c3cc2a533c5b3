"""``trawl eval ordering``: graph files, the policies, the JSON keys, and AOPIC's lead on a web-like graph."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.eval.ordering import COVERAGE, MARKS, evaluate
from cli.eval.ordering_crawl import POLICIES, ImportanceCrawl, continuous_order
from cli.eval.ordering_graph import CrawlGraph, GraphFormatError, generate, pagerank, read_graph
from cli.main import app
from services.importance.settings import ImportanceSettings

KEYS = {"graph", "marks", "damping", "partitions", "shared_virtual_page", "passes", "pagerank_share",
        "ratio_to_omniscient", "spearman", "conservation", "continuous", "settings", "generated"}
CONTINUOUS_KEYS = {"fetches", "fetches_per_page", "spearman", "stopped_after", "crawled", "spearman_when_stopped",
                   "coverage", "pagerank_share", "ratio_to_omniscient", "conservation"}


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


def test_replays_bring_the_estimates_after_one_pass_closer_to_pagerank() -> None:
    graph, _ = generate(10_000, 2, 10)
    without = evaluate(graph, ("aopic",), ImportanceSettings(replays_per_visit=0.0), seed=2)
    replayed = evaluate(graph, ("aopic",), ImportanceSettings(replays_per_visit=4.0), seed=2)
    assert replayed["settings"]["replays_per_visit"] == 4.0
    assert replayed["spearman"]["aopic"]["crawled"] == without["spearman"]["aopic"]["crawled"] == graph.reachable()
    assert replayed["spearman"]["aopic"]["all_crawled"] > without["spearman"]["aopic"]["all_crawled"] + 0.03
    assert math.isclose(replayed["conservation"]["aopic"]["accounted"], 100.0, rel_tol=1e-9)


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


def test_the_continuous_crawl_revisits_pages_until_every_page_was_fetched_and_conserves_cash() -> None:
    graph, _ = generate(2000, 3, 5)
    one_pass = evaluate(graph, ("aopic",), seed=3)
    result = evaluate(graph, ("aopic",), seed=3, continuous=True)
    steady = result["continuous"]
    assert set(steady) == CONTINUOUS_KEYS
    reachable = graph.reachable()
    assert steady["crawled"] == reachable
    assert steady["fetches"] == steady["stopped_after"] > reachable  # pages fetched again before the last new one
    assert steady["fetches_per_page"] == pytest.approx(steady["fetches"] / reachable)
    assert [c["share"] for c in steady["coverage"]] == list(COVERAGE)
    fetches = [c["fetches"] for c in steady["coverage"]]
    assert fetches == sorted(fetches) and fetches[-1] <= steady["fetches"]
    assert steady["spearman"] == steady["spearman_when_stopped"]
    no_replays = evaluate(graph, ("aopic",), ImportanceSettings(replays_per_visit=0.0), seed=3)
    assert steady["spearman"] > no_replays["spearman"]["aopic"]["all_crawled"]  # the revisits passed cash on
    assert math.isclose(steady["conservation"]["accounted"], 100.0, rel_tol=1e-9)  # rounding over many fetches
    shares = steady["pagerank_share"]
    assert shares == sorted(shares) and len(shares) == len(MARKS)
    assert steady["ratio_to_omniscient"] == pytest.approx(
        [s / b for s, b in zip(shares, result["pagerank_share"]["omniscient"], strict=True)])
    # the one-pass figures are the same with or without the continuous crawl
    for key in ("pagerank_share", "ratio_to_omniscient", "spearman", "conservation"):
        assert result[key] == one_pass[key], key
    assert one_pass["continuous"] is None


def test_the_continuous_order_fetches_a_page_again_once_its_cash_is_the_highest() -> None:
    # a home page linking to b and c, b linking back, c without links (15% to the virtual page, which pays all
    # pages once no home or index page is left uncrawled)
    graph = CrawlGraph(["http://a.example/", "http://a.example/b.html", "http://a.example/c.html"],
                       [[1, 2], [0], []], [0])
    crawl = ImportanceCrawl(graph, ImportanceSettings(replays_per_visit=0.0, virtual_share=0.15).opic_config(1))
    order = continuous_order(crawl)
    assert [next(order) for _ in range(2)] == [0, 1]  # 100 from the home page: 42.5 each to b and c, 5 each back
    # b's 47.5: 40.375 to the home page, 2.375 to each page; the home page (47.75) beats c (47.5 announced)
    assert next(order) == 0
    assert crawl.cash(2) == pytest.approx(49.875) and crawl.cash(0) == pytest.approx(47.75)
    assert next(order) == 2
    assert math.isclose(crawl.accounted(), 100.0, rel_tol=1e-12)


def test_the_continuous_crawl_stops_at_its_fetch_limit() -> None:
    graph, _ = generate(2000, 3, 5)
    steady = evaluate(graph, ("aopic",), seed=3, continuous=True, max_fetches=0.25)["continuous"]
    assert steady["fetches"] is None and steady["fetches_per_page"] is None and steady["spearman"] is None
    assert steady["stopped_after"] == 500 and steady["crawled"] < graph.reachable()
    assert steady["spearman_when_stopped"] is not None


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
    assert payload["continuous"] is None

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
    out = CliRunner().invoke(app, ["eval", "ordering", "--generate", "100", "--continuous", "--max-fetches", "0"])
    assert out.exit_code == 2
