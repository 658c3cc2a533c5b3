"""The polite crawl's webs as ordering families outside the suite (``cli/eval/ordering_polite_webs.py``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.eval.ordering_graph import GraphFormatError
from cli.eval.ordering_polite_webs import NAMES, SCALE
from cli.eval.ordering_suite import FAMILIES, family_graph
from cli.main import app
from libs.simweb.site_tree import build_tree_web, tree_family


def test_a_polite_web_is_its_reachable_pages_seeded_by_every_home_page() -> None:
    web = build_tree_web(tree_family(SCALE)["mixed"])
    graph = family_graph("polite-mixed", seed=1)
    reachable = web.reachable(web.home_pages())
    assert set(graph.labels) == reachable
    assert sorted(graph.labels[s] for s in graph.seeds) == sorted(u for u in web.home_pages() if u in reachable)
    assert graph.reachable() == graph.size  # every page is reachable from the seeds
    some = next(u for u in graph.labels if web.links_at(u))
    targets = {graph.labels[t] for t in graph.out[graph.labels.index(some)]}
    assert targets == {link.target_url for link in web.links_at(some)} & reachable - {some}


def test_the_polite_webs_are_outside_the_suite_and_other_names_are_refused() -> None:
    assert set(NAMES) == {"polite-wide", "polite-narrow", "polite-deep", "polite-mixed"}
    assert not set(NAMES) & set(FAMILIES)
    with pytest.raises(GraphFormatError, match="polite-deep"):
        family_graph("polite-tall", seed=1)


def test_the_ordering_command_crawls_a_polite_web() -> None:
    out = CliRunner().invoke(app, ["eval", "ordering", "--family", "polite-mixed", "--partitions", "12",
                                   "--policies", "aopic,opic", "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["generated"]["family"] == "polite-mixed" and result["partitions"] == 12
    assert set(result["ratio_to_omniscient"]) == {"aopic", "opic", "omniscient"}
