"""The ordering suite: its families, the targets' check, AOPIC against plain OPIC and breadth-first on every family."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import cli.eval.ordering_crawl as ordering_crawl
import services.scheduler.handlers as scheduler_handlers
from cli.eval.ordering import MARKS, evaluate, run_suite
from cli.eval.ordering_copying import CopyingConfig, build_copying_graph
from cli.eval.ordering_crawl import policy_order
from cli.eval.ordering_graph import pagerank
from cli.eval.ordering_suite import FAMILIES, TARGETS, check, family_graph, real_graph
from cli.main import app
from services.importance.engine import OpicEngine
from services.importance.settings import ImportanceSettings
from services.importance.shard import Shard
from services.scheduler.frontier.priority import crawl_priority

SMALL_PAGES = 3000
"""Pages of the generated families in these tests (the real graphs are crawled whole)."""


def test_the_suite_has_tuning_and_held_out_families_among_them_two_real_web_graphs() -> None:
    splits = {name: family.split for name, family in FAMILIES.items()}
    assert set(splits.values()) == {"tuning", "held-out"}
    assert len(FAMILIES) >= 4
    for name in ("wikispeedia", "polblogs"):
        graph = real_graph(name, 1)
        assert all(label.startswith(("http://", "https://")) for label in graph.labels)
        assert len(graph.seeds) == 10 and all(graph.out[s] for s in graph.seeds)
        assert graph.reachable() > graph.size // 2
    assert real_graph("wikispeedia", 1).size == 4592 and real_graph("polblogs", 1).size == 1223
    assert real_graph("polblogs", 1).seeds != real_graph("polblogs", 2).seeds  # instances differ by their seeds


def test_the_copying_model_is_host_structured_and_reproducible() -> None:
    graph = build_copying_graph(CopyingConfig(5000, 3))
    again = build_copying_graph(CopyingConfig(5000, 3))
    assert graph.out == again.out and graph.seeds == again.seeds
    host = [label.split("/")[2] for label in graph.labels]
    homes = {i for i, label in enumerate(graph.labels) if label.endswith(".example/")}
    cross = [(s, t) for s, targets in enumerate(graph.out) for t in targets if host[s] != host[t]]
    assert 0.1 < len(cross) / graph.edges < 0.5
    assert not any(t in homes for _, t in cross)  # sites are entered through their deep pages
    sizes: dict[str, int] = {}
    for h in host:
        sizes[h] = sizes.get(h, 0) + 1
    largest = sorted(sizes.values(), reverse=True)
    assert largest[0] > 10 * largest[len(largest) // 2]  # Zipf: a few large sites, many small ones
    assert graph.reachable() > 0.9 * graph.size


def test_the_targets_check_names_what_is_missed() -> None:
    marks = (0.1, 0.2, 0.3, 0.5)
    ok = check({"aopic": [0.91, 0.93, 0.95, 0.97], "opic": [0.92, 0.94, 0.95, 0.96],
                "breadth_first": [0.8, 0.85, 0.9, 0.95]}, 0.85, marks)
    assert ok["ratio"] and ok["rivals"] and ok["spearman"]
    missed = check({"aopic": [0.88, 0.93, 0.95, 0.97], "opic": [0.91, 0.94, 0.95, 0.96],
                    "breadth_first": [0.8, 0.85, 0.9, 0.95]}, 0.7, marks)
    assert not missed["ratio"] and not missed["rivals"] and not missed["spearman"]
    assert missed["worst_gap"]["opic"] == pytest.approx(-0.03)


def test_the_evaluator_drives_the_services_policy_code() -> None:
    """AOPIC in the evaluator: the importance service's engine and settings, ordered by the scheduler's priority."""
    # Names the two modules import rather than export: the point is that both use this one function.
    used = (ordering_crawl.crawl_priority, scheduler_handlers.crawl_priority)  # type: ignore[attr-defined]
    assert used == (crawl_priority, crawl_priority)
    graph = family_graph("polblogs", 1)
    order, crawl = policy_order("aopic", graph, pagerank(graph), ImportanceSettings(), 1, 1)
    assert crawl is not None
    assert crawl.config == ImportanceSettings().opic_config(1)  # what the service's main() builds its engines with
    assert all(type(s) is Shard and type(s.engine) is OpicEngine for s in crawl.shards)
    # each step takes the discovered page with the highest crawl_priority of the cash announced for it
    announced = {s: crawl.cash(s) for s in graph.seeds}
    crawled: set[int] = set()
    for _ in range(50):
        node = next(order)  # the previous page's visit, then the choice
        for shard in crawl.shards:  # the cash last announced for each page (a shard's ``shown``)
            for slot in range(len(shard.engine)):
                if shard.engine.shown[slot] >= 0.0:
                    announced[crawl.node_of[shard.engine.keys[slot]]] = shard.engine.shown[slot]
        best = max(crawl_priority(c) for n, c in announced.items() if n not in crawled)
        assert crawl_priority(announced[node]) == pytest.approx(best)
        crawled.add(node)


def _mean(results: list[dict[str, Any]], policy: str) -> list[float]:
    return [sum(r["ratio_to_omniscient"][policy][i] for r in results) / len(results) for i in range(len(MARKS))]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_aopic_is_never_more_than_002_below_plain_opic_or_breadth_first(family: str) -> None:
    results = [evaluate(family_graph(family, seed, SMALL_PAGES), ("aopic", "opic", "breadth_first"), seed=seed)
               for seed in (1, 2)]
    aopic = _mean(results, "aopic")
    for rival in TARGETS.rivals:
        other = _mean(results, rival)
        for mark, (a, r) in enumerate(zip(aopic, other, strict=True)):
            assert a >= r - TARGETS.margin, (family, rival, MARKS[mark], a, r)


def test_the_suite_command_prints_every_family_with_its_split_and_targets() -> None:
    out = CliRunner().invoke(app, ["eval", "ordering", "--suite", "--families", "polblogs", "--instances", "1",
                                   "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    fam = payload["families"]["polblogs"]
    assert fam["split"] == "held-out" and fam["instances"] == 1
    assert set(fam["targets"]) == {"ratio", "rivals", "worst_gap", "spearman"}
    assert set(fam["ratio_to_omniscient"]) >= {"aopic", "opic", "breadth_first", "random", "omniscient"}
    assert payload == run_suite(ImportanceSettings(), 1, families=("polblogs",)) | {"pages": payload["pages"]}
    one = CliRunner().invoke(app, ["eval", "ordering", "--family", "polblogs", "--seed", "2", "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.output)["generated"] == {"family": "polblogs", "pages": 20_000, "seed": 2}
    bad = CliRunner().invoke(app, ["eval", "ordering", "--family", "nowhere"])
    assert bad.exit_code == 2
