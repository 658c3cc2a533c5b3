"""``trawl eval ordering``: how well each crawl order captures PageRank early, and how good AOPIC's estimates are.

    trawl eval ordering --graph FILE --seeds FILE [--json]
    trawl eval ordering --generate 100000 --seed 3 [--save-graph FILE --save-seeds FILE] [--json]
    trawl eval ordering --family NAME --seed 3 [--pages N] [--json]
    trawl eval ordering --suite [--instances 3] [--pages N] [--families LIST] [--json]

The graph is crawled, one page at a time from the seeds, under the policies AOPIC-greedy
(the importance service's classes and settings), plain OPIC (no virtual page, no window),
breadth-first, random and omniscient (the discovered page with the highest true
PageRank first). After 10%, 20%, 30% and 50% of the graph's pages are crawled it prints
the share of the total PageRank (damping 0.85) each policy captured and its ratio to
omniscient's, and the Spearman correlation between AOPIC's importance estimates and
PageRank over the pages crawled, at each mark and once every reachable page was crawled.
AOPIC replays crawled pages as the service does (``TRAWL_IMPORTANCE_REPLAYS_PER_VISIT``).
With ``--continuous`` AOPIC also crawls as OPIC's greedy policy does when it never stops:
the page with the most cash next, fetched before or not, until every reachable page was
fetched once; it reports how many fetches that took and the Spearman correlation then.
AOPIC runs with the importance service's settings, read from the environment like the
service's (``TRAWL_IMPORTANCE_*``), so a setting's effect is measured by setting it. The JSON
object's keys are documented in ``docs/evaluation.md``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import typer
from scipy.stats import spearmanr

from cli.eval.ordering_crawl import POLICIES, ImportanceCrawl, continuous_order, policy_order, revisit_pass
from cli.eval.ordering_graph import DAMPING, CrawlGraph, GraphFormatError, generate, pagerank, read_graph
from cli.eval.ordering_polite_webs import NAMES as POLITE_WEBS
from cli.eval.ordering_suite import DEFAULT_PAGES, FAMILIES, SUITE_POLICIES, family_graph, summarise
from cli.eval.shared_virtual import MODES as SHARED_MODES
from cli.output import console, emit
from libs.common.settings import SettingsError, load_settings
from libs.simweb.webgraph import write_graph
from services.importance.settings import ImportanceSettings

MARKS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5)
DEFAULT_POLICIES: tuple[str, ...] = ("aopic", "opic", "breadth_first", "random", "omniscient")
"""Policies run unless ``--policies`` names others; the references (``known_pagerank``, ``in_links``) run when named."""
COVERAGE: tuple[float, ...] = (0.9, 0.99, 0.999)
"""Shares of the reachable pages at which the continuous crawl reports its fetches and Spearman."""


def spearman(crawl: ImportanceCrawl, crawled: list[int], rank: np.ndarray) -> float | None:
    if len(crawled) < 3:
        return None
    estimates = [crawl.importance(node) for node in crawled]
    value = float(spearmanr(estimates, rank[crawled]).statistic)
    return None if math.isnan(value) else value


def run_policy(name: str, graph: CrawlGraph, rank: np.ndarray, settings: ImportanceSettings, partitions: int,
               seed: int, passes: int = 1, shared_virtual: str = "none") -> dict[str, Any]:
    """Crawls ``graph`` under one policy: PageRank shares at the marks (and, for OPIC, estimates)."""
    order, crawl = policy_order(name, graph, rank, settings, partitions, seed, shared_virtual)
    checkpoints = [max(1, round(mark * graph.size)) for mark in MARKS]
    shares: list[float] = []
    at_marks: list[float | None] = []
    crawled: list[int] = []
    captured = 0.0
    for node in order:
        crawled.append(node)
        captured += float(rank[node])
        if len(shares) < len(checkpoints) and len(crawled) == checkpoints[len(shares)]:
            shares.append(captured)
            if crawl is not None:
                at_marks.append(spearman(crawl, crawled, rank))
            elif len(shares) == len(checkpoints):
                break
    while len(shares) < len(checkpoints):  # the policy ran out of pages to discover
        shares.append(captured)
        if crawl is not None:
            at_marks.append(spearman(crawl, crawled, rank))
    result: dict[str, Any] = {"pagerank_share": shares}
    if crawl is not None:
        after_passes = [spearman(crawl, crawled, rank)]
        step = len(crawled)
        for _ in range(passes - 1):
            step = revisit_pass(crawl, crawled, step)
            after_passes.append(spearman(crawl, crawled, rank))
        result["spearman"] = {"at_marks": at_marks, "all_crawled": after_passes[0], "crawled": len(crawled),
                              "after_passes": after_passes}
        result["conservation"] = {"accounted": crawl.accounted(), "total": 100.0}
    return result


def run_continuous(graph: CrawlGraph, rank: np.ndarray, settings: ImportanceSettings, partitions: int,
                   max_fetches: float) -> dict[str, Any]:
    """AOPIC crawling continuously (``continuous_order``) until every reachable page was fetched once.

    Stops there, or after ``max_fetches`` times the graph's nodes, or when no page has cash left.
    The PageRank shares at the marks count the distinct pages fetched, the first fetch of each.
    """
    # OPIC's own policy: every visit is a fetch (no replays between them)
    crawl = ImportanceCrawl(graph, dataclasses.replace(settings.opic_config(partitions), replays_per_visit=0.0),
                            partitions)
    reachable = graph.reachable()
    limit = max(1, math.floor(max_fetches * graph.size))
    checkpoints = [max(1, round(mark * graph.size)) for mark in MARKS]
    coverage_at = [max(1, math.ceil(share * reachable)) for share in COVERAGE]
    seen = bytearray(graph.size)
    crawled: list[int] = []
    shares: list[float] = []
    coverage: list[dict[str, Any]] = []
    captured = 0.0
    fetches = 0
    full: int | None = None
    for node in continuous_order(crawl):
        fetches += 1
        if not seen[node]:
            seen[node] = 1
            crawled.append(node)
            captured += float(rank[node])
            if len(shares) < len(checkpoints) and len(crawled) == checkpoints[len(shares)]:
                shares.append(captured)
            while len(coverage) < len(coverage_at) and len(crawled) >= coverage_at[len(coverage)]:
                coverage.append({"share": COVERAGE[len(coverage)], "fetches": fetches,
                                 "spearman": spearman(crawl, crawled, rank)})
            if len(crawled) == reachable:
                full = fetches
                break
        if fetches >= limit:
            break
    while len(shares) < len(checkpoints):
        shares.append(captured)
    return {
        "fetches": full,
        "fetches_per_page": None if full is None else full / reachable,
        "spearman": spearman(crawl, crawled, rank) if full is not None else None,
        "stopped_after": fetches,
        "crawled": len(crawled),
        "spearman_when_stopped": spearman(crawl, crawled, rank),
        "coverage": coverage,
        "pagerank_share": shares,
        "conservation": {"accounted": crawl.accounted(), "total": 100.0},
    }


def evaluate(graph: CrawlGraph, policies: tuple[str, ...] = DEFAULT_POLICIES,
             settings: ImportanceSettings | None = None, partitions: int = 1, seed: int = 1, passes: int = 1,
             continuous: bool = False, max_fetches: float = 100.0, shared_virtual: str = "none") -> dict[str, Any]:
    """The ``--json`` object (less ``generated``) for ``graph``; ``shared_virtual``: a what-if for AOPIC's
    partitions (``cli/eval/shared_virtual.py``), ``none`` as in the service."""
    settings = settings or ImportanceSettings()
    rank = pagerank(graph, DAMPING)
    wanted = tuple(dict.fromkeys((*policies, "omniscient")))
    runs = {name: run_policy(name, graph, rank, settings, partitions, seed, passes, shared_virtual)
            for name in wanted}
    best = runs["omniscient"]["pagerank_share"]
    steady: dict[str, Any] | None = None
    if continuous:
        steady = run_continuous(graph, rank, settings, partitions, max_fetches)
        steady["ratio_to_omniscient"] = [s / b if b else None for s, b in zip(steady["pagerank_share"], best,
                                                                               strict=True)]
    return {
        "graph": {"nodes": graph.size, "edges": graph.edges, "seeds": len(graph.seeds),
                  "reachable": graph.reachable()},
        "marks": list(MARKS),
        "damping": DAMPING,
        "partitions": partitions,
        "shared_virtual_page": shared_virtual,
        "passes": passes,
        "pagerank_share": {name: run["pagerank_share"] for name, run in runs.items()},
        "ratio_to_omniscient": {
            name: [s / b if b else None for s, b in zip(run["pagerank_share"], best, strict=True)]
            for name, run in runs.items()
        },
        "spearman": {name: run["spearman"] for name, run in runs.items() if "spearman" in run},
        "conservation": {name: run["conservation"] for name, run in runs.items() if "conservation" in run},
        "continuous": steady,
        "settings": _settings(settings),
    }


def run_suite(settings: ImportanceSettings | None = None, instances: int = 3, pages: int = DEFAULT_PAGES,
              families: tuple[str, ...] = tuple(FAMILIES), partitions: int = 1) -> dict[str, Any]:
    """Every family of the ordering suite (``ordering_suite.py``), instances 1..K each: the ``--suite`` object."""
    settings = settings or ImportanceSettings()
    out: dict[str, Any] = {}
    for name in families:
        results = [evaluate(family_graph(name, seed, pages), SUITE_POLICIES, settings, partitions, seed)
                   for seed in range(1, instances + 1)]
        out[name] = summarise(name, results, MARKS, pages)
    return {"marks": list(MARKS), "pages": pages, "instances": instances, "partitions": partitions,
            "families": out, "settings": _settings(settings)}


def _settings(settings: ImportanceSettings) -> dict[str, Any]:
    return {
        "virtual_share": settings.virtual_share, "virtual_to_all": settings.virtual_to_all,
        "home_weight": settings.home_weight, "index_weight": settings.index_weight,
        "page_weight": settings.page_weight,
        "site_size_exponent": settings.site_size_exponent, "announce_growth": settings.announce_growth,
        "announce_min_change": settings.announce_min_change, "replays_per_visit": settings.replays_per_visit,
        "internal_link_weight": settings.internal_link_weight,
    }


def _suite_rows(suite: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for name, fam in suite["families"].items():
        met = fam["targets"]
        verdict = ", ".join(k for k in ("ratio", "rivals", "spearman") if not met[k]) or "all met"
        for policy, ratios in fam["ratio_to_omniscient"].items():
            if policy == "omniscient":  # 1 at every mark, by definition
                continue
            rows.append([name if policy == "aopic" else "", fam["split"] if policy == "aopic" else "", policy,
                         *(f"{r:.3f}" for r in ratios),
                         f"{fam['spearman'][policy]:.3f}" if policy in fam["spearman"] else "",
                         verdict if policy == "aopic" else ""])
    return rows


def _rows(result: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for name, shares in result["pagerank_share"].items():
        ratios = result["ratio_to_omniscient"][name]
        rows.append([name, *(f"{s:.3f} ({r:.2f})" for s, r in zip(shares, ratios, strict=True))])
    for name, sp in result["spearman"].items():
        cells = ["-" if v is None else f"{v:.3f}" for v in sp["at_marks"]]
        final = "-" if sp["all_crawled"] is None else f"{sp['all_crawled']:.3f}"
        rows.append([f"spearman {name} (all crawled: {final})", *cells])
        for number, value in enumerate(sp["after_passes"][1:], start=2):
            rows.append([f"spearman {name} after pass {number}: {'-' if value is None else f'{value:.3f}'}",
                         *[""] * len(cells)])
    steady = result.get("continuous")
    if steady is not None:
        ratios = steady["ratio_to_omniscient"]
        rows.append(["aopic continuous (distinct pages)",
                     *(f"{s:.3f} ({'-' if r is None else f'{r:.2f}'})"
                       for s, r in zip(steady["pagerank_share"], ratios, strict=True))])
        if steady["fetches"] is None:
            final = (f"not every page fetched after {steady['stopped_after']} fetches ({steady['crawled']} pages):"
                     f" spearman {_number(steady['spearman_when_stopped'])}")
        else:
            final = (f"every page fetched after {steady['fetches']} fetches ({steady['fetches_per_page']:.2f} per"
                     f" page): spearman {_number(steady['spearman'])}")
        rows.append([f"aopic continuous: {final}", *[""] * len(MARKS)])
    return rows


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def register(app: typer.Typer) -> None:
    @app.command("ordering")
    def ordering(
        graph_file: Path | None = typer.Option(None, "--graph", help="Edges, one 'source target' per line."),
        seeds_file: Path | None = typer.Option(None, "--seeds", help="Seed nodes, one per line."),
        generate_pages: int = typer.Option(0, "--generate", help="Crawl a generated web-like graph of N pages."),
        seed: int = typer.Option(1, "--seed", help="Seed of the generator (and of the random policy)."),
        seed_hosts: int = typer.Option(10, "--seed-hosts", help="Generated graph: home pages used as seeds."),
        family: str | None = typer.Option(None, "--family", help=f"Crawl one instance (--seed) of a suite family:"
                                          f" {', '.join(FAMILIES)}; or one of the polite crawl's webs, outside"
                                          f" the suite: {', '.join(POLITE_WEBS)}."),
        suite: bool = typer.Option(False, "--suite", help="Run every family of the suite (tuning and held-out),"
                                   " --instances each, and check the targets."),
        instances: int = typer.Option(3, "--instances", help="--suite: instances (seeds 1..K) per family."),
        families: str = typer.Option(",".join(FAMILIES), "--families", help="--suite: comma-separated families."),
        pages: int = typer.Option(DEFAULT_PAGES, "--pages", help="--family / --suite: pages of generated graphs."),
        save_graph: Path | None = typer.Option(None, "--save-graph", help="Generated graph: write its edges here."),
        save_seeds: Path | None = typer.Option(None, "--save-seeds", help="Generated graph: write its seeds here."),
        partitions: int = typer.Option(1, "--partitions", help="Split AOPIC's state as the service's partitions."),
        shared_virtual: str = typer.Option("none", "--shared-virtual-page", help="What-if, not the service:"
                                           " the partitions' virtual pages pay as one virtual page would while"
                                           " some page has a discovery weight (weighted) or always (all)."),
        policies: str = typer.Option(",".join(DEFAULT_POLICIES), "--policies", help="Comma-separated policies to run"
                                     f" (known: {', '.join(POLICIES)})."),
        passes: int = typer.Option(1, "--passes", help="OPIC policies: after the first pass, revisit every page"
                                   " once more per extra pass (most cash first) and report Spearman after each."),
        continuous: bool = typer.Option(False, "--continuous", help="Also crawl with AOPIC's continuous greedy"
                                        " policy (most cash first, fetched before or not) until every page was"
                                        " fetched once; report the fetches and Spearman then."),
        max_fetches: float = typer.Option(100.0, "--max-fetches", help="--continuous: stop after this many fetches"
                                          " per node of the graph if some page was still never fetched."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Share of PageRank captured after 10/20/30/50% crawled per policy; AOPIC estimates vs PageRank."""
        generated: dict[str, Any] | None = None
        try:
            wanted = tuple(p.strip() for p in policies.split(",") if p.strip())
            unknown = sorted(set(wanted) - set(POLICIES))
            if unknown:
                raise GraphFormatError(f"unknown policy {', '.join(unknown)}; known: {', '.join(POLICIES)}")
            chosen = tuple(f.strip() for f in families.split(",") if f.strip())
            if suite:
                unknown = sorted(set(chosen) - set(FAMILIES))
                if unknown or instances < 1 or pages < 100:
                    raise GraphFormatError(f"unknown family {', '.join(unknown)}" if unknown
                                           else "--instances must be at least 1 and --pages at least 100")
                graph = CrawlGraph([], [], [])
            elif family is not None:
                graph = family_graph(family, seed, pages)
                generated = {"family": family, "pages": pages, "seed": seed}
            elif generate_pages:
                graph, web = generate(generate_pages, seed, seed_hosts)
                generated = {"pages": generate_pages, "seed": seed, "seed_hosts": seed_hosts}
                if save_graph is not None and save_seeds is not None:
                    write_graph(web, save_graph, save_seeds, graph.seeds)
            elif graph_file is not None and seeds_file is not None:
                graph = read_graph(graph_file, seeds_file)
            else:
                raise GraphFormatError("give --graph and --seeds, or --generate N")
            if partitions < 1 or passes < 1:
                raise GraphFormatError("--partitions and --passes must be at least 1")
            if shared_virtual not in SHARED_MODES:
                raise GraphFormatError(f"--shared-virtual-page is one of {', '.join(SHARED_MODES)}")
            if max_fetches <= 0:
                raise GraphFormatError("--max-fetches must be positive")
            settings = load_settings(ImportanceSettings, os.environ)
        except (OSError, GraphFormatError, SettingsError) as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from exc
        if suite:
            report = run_suite(settings, instances, pages, chosen, partitions)
            emit(as_json, report, "Ordering suite: AOPIC and the other policies, ratio to omniscient (mean over"
                 f" {instances} instances)", ["family", "split", "policy", *(f"{int(m * 100)}%" for m in MARKS),
                                              "spearman", "targets missed"], _suite_rows(report))
            return
        result = evaluate(graph, wanted, settings, partitions, seed, passes, continuous, max_fetches, shared_virtual)
        result["generated"] = generated
        marks = [f"{int(m * 100)}% crawled" for m in MARKS]
        emit(as_json, result, "PageRank share captured (ratio to omniscient)", ["policy", *marks], _rows(result))
