"""The revisit benchmark's arithmetic: per-page figures, the idle stack's share taken off, the ratios."""

from __future__ import annotations

from bench.revisit_cost import Pass, ratios, tree_web_config
from libs.simweb.site_tree import tree_family


def test_figures_per_page_and_less_the_idle_stack() -> None:
    cpu = {"scheduler": 2.0, "fetcher": 1.0, "postgres": 1.5, "broker": 1.5, "simweb": 9.0}
    idle = {"scheduler": 0.5, "broker": 1.0, "fetcher": 1.5}  # the idle stack's CPU seconds for as long
    conditional = Pass("conditional", 100, {200: 20, 304: 80}, 30_000, 20, 20, 4.0, cpu, idle)
    figures = conditional.figures()
    assert figures["cpu_ms_per_page"] == 60.0  # the simulated web is not the crawler's cost
    assert figures["services_cpu_ms_per_page"] == 30.0
    assert figures["net_cpu_ms_per_page"] == 60.0 - 1000 * (0.5 + 1.0 + 1.0) / 100  # never below nothing per part
    assert figures["net_cpu_ms_per_page_by_part"]["fetcher"] == 0.0
    assert figures["all_found"] and figures["bytes_per_page"] == 300
    full = Pass("unconditional", 100, {200: 100}, 100_000, 18, 17, 8.0, {p: 2 * s for p, s in cpu.items()}, {})
    assert not full.figures()["all_found"]
    r = ratios({"passes": {"conditional": figures, "unconditional": full.figures()}})
    assert (r["bytes"], r["cpu"], r["services_cpu"]) == (0.3, 0.5, 0.5)


def test_a_politeness_web_is_revisited_with_its_edits_and_without_its_crawl_delays() -> None:
    config = tree_web_config("wide", 0.1, 0.2)
    assert config.page_edit_ratio == 0.2 and config.crawl_delay_share == 0.0
    assert config.groups == tree_family(0.1)["wide"].groups and config.seed == tree_family(0.1)["wide"].seed
