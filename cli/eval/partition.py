"""``trawl eval partition --graph FILE --home URL --crawlers 1..10``: a large site split across crawlers.

FILE is the site's internal link graph, one link ``source target`` per line. For each number
of crawlers N the partition planner (``services/scheduler/site_partition``) splits the site by
path into N groups with their seeds, N crawlers are simulated on the graph, and the paper's
figures are printed: overlap, coverage, acceleration and the composite (eps 0.8, delta 0.2).
``--generate`` first writes a generated site graph (``--seed``) with the paper's path
structure to FILE (its home page is then the default ``--home``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from cli.output import console, emit
from services.scheduler.site_partition.graph import SiteGraph, load_graph
from services.scheduler.site_partition.planner import PartitionPlanner
from services.scheduler.site_partition.simulate import DELTA, EPS, TAIL_RULES, evaluate
from services.scheduler.site_partition.synthetic import generate


def crawler_counts(spec: str) -> list[int]:
    """``"1..10"``, ``"3"`` or ``"1,2,4"`` -> the numbers of crawlers to simulate."""
    try:
        if ".." in spec:
            low, high = (int(p) for p in spec.split("..", 1))
            counts = list(range(low, high + 1))
        else:
            counts = [int(p) for p in spec.split(",") if p.strip()]
    except ValueError as exc:
        raise ValueError(f"--crawlers {spec!r}: use 1..10, 3 or 1,2,4") from exc
    if not counts or min(counts) < 1:
        raise ValueError(f"--crawlers {spec!r}: at least one crawler")
    return counts


def _write_graph(path: Path, edges: list[tuple[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for source, target in edges:
            f.write(f"{source} {target}\n")


def evaluate_graph(site: SiteGraph, graph_file: Path, counts: list[int], tail: str) -> dict[str, Any]:
    """The ``--json`` object (less the generator) for ``site``."""
    planner = PartitionPlanner()
    plan = planner.plan(site, 1)
    results = []
    for n in counts:
        f = evaluate(site, n, tail, planner)
        results.append(
            {
                "crawlers": n,
                "overlap": f.overlap,
                "coverage": f.coverage,
                "acceleration": f.acceleration,
                "composite": f.composite,
                "downloaded": f.downloaded,
                "distinct": f.distinct,
                "busiest": f.busiest,
                "fetched_per_crawler": list(f.fetched),
            }
        )
    return {
        "graph_file": str(graph_file),
        "home": site.home,
        "pages": site.pages,
        "links": site.links,
        "paths": plan.paths,
        "key_paths": len(plan.key_paths),
        "key_path_share": len(plan.key_paths) / plan.paths,
        "same_path_link_share": site.same_path_link_share(),
        "tail": tail,
        "eps": EPS,
        "delta": DELTA,
        "results": results,
    }


def run(
    graph: Path = typer.Option(
        ..., "--graph", help="Link graph, 'source target' per line; written first with --generate."
    ),
    home: str | None = typer.Option(None, "--home", help="The site's home page (default with --generate: its home)."),
    crawlers: str = typer.Option("1..10", "--crawlers", help="Numbers of crawlers: 1..10, 3 or 1,2,4."),
    tail: str = typer.Option(
        "hashed", "--tail", help=f"Who fetches paths outside the key paths: {', '.join(TAIL_RULES)}."
    ),
    generate_graph: bool = typer.Option(False, "--generate", help="Write a generated site graph to --graph first."),
    seed: int = typer.Option(0, "--seed", help="Seed of --generate."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Split a site by path across N crawlers and measure overlap, coverage and acceleration (seed 004)."""
    generated = None
    if generate_graph:
        generated_home, edges = generate(seed)
        _write_graph(graph, edges)
        home = home or generated_home
        generated = {"seed": seed}
    if tail not in TAIL_RULES:
        console.print(f"[red]--tail must be one of {', '.join(TAIL_RULES)}[/red]")
        raise typer.Exit(2)
    if not home:
        console.print("[red]--home is required (the site's home page)[/red]")
        raise typer.Exit(2)
    try:
        counts = crawler_counts(crawlers)
        site = load_graph(graph, home)
    except (OSError, ValueError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    payload = evaluate_graph(site, graph, counts, tail)
    payload["generated"] = generated
    rows = [
        (
            r["crawlers"],
            f"{r['overlap']:.3f}",
            f"{r['coverage']:.3f}",
            f"{r['acceleration']:.2f}",
            f"{r['composite']:.2f}",
        )
        for r in payload["results"]
    ]
    title = f"{site.pages} pages, {payload['paths']} paths, {payload['key_paths']} key paths; tail {tail}"
    emit(as_json, payload, title, ["crawlers", "overlap", "coverage", "acceleration", "composite"], rows)


def register(app: typer.Typer) -> None:
    app.command("partition")(run)
