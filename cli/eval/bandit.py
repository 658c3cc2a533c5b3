"""``trawl eval bandit --sites FILE --budget N``: total reward of every site policy on recorded sites.

FILE holds JSON lines ``{"site": "<name>", "rewards": [<page 1>, <page 2>, ...]}``: the reward
of each page (external links, new URLs, ...) in the order a breadth-first crawl of that site
fetches them. Each policy spends the budget through the same classes the scheduler runs
(``services/scheduler/bandits``). ``--generate institutes|universities`` first writes a
generated site set of that kind (``--seed``) to FILE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from cli.output import console, emit
from services.scheduler.bandits.policies import FIXED_RULES, POLICY_NAMES, RecencyGreedy, explore_pages, make_policy
from services.scheduler.bandits.replay import SiteFileError, dump_site_rewards, load_site_rewards, replay
from services.scheduler.bandits.site_sets import KINDS, generate


def evaluate(sites_file: Path, budget: int, step: int) -> dict[str, Any]:
    """The figures of every policy on ``sites_file`` (the ``--json`` object, less the generator)."""
    sites = load_site_rewards(sites_file)
    results = {
        name: replay(make_policy(name, budget=budget, sites=len(sites), step=step), sites, budget)
        for name in POLICY_NAMES
    }
    best_fixed = max(FIXED_RULES, key=lambda name: (results[name].reward, -FIXED_RULES.index(name)))
    ours = RecencyGreedy()
    return {
        "sites_file": str(sites_file),
        "sites": len(sites),
        "budget": budget,
        "parameters": {
            "r1_explore_pages": explore_pages(budget, len(sites), step),
            "r2_batch": step,
            "r3_initial_pages": step,
            "quantum_pages": step,
            "recency_decay": ours.recency_decay,
            "recency_floor": ours.floor,
        },
        "policies": {
            name: {"reward": r.reward, "pages": r.pages, "pages_by_site": r.pages_by_site}
            for name, r in results.items()
        },
        "ranking": sorted(POLICY_NAMES, key=lambda name: (-results[name].reward, POLICY_NAMES.index(name))),
        "best_fixed_rule": best_fixed,
        "recency_vs_best_fixed_rule": (
            results["recency"].reward / results[best_fixed].reward if results[best_fixed].reward else None
        ),
    }


def run(
    sites: Path = typer.Option(..., "--sites", help="Site file (JSON lines); written first with --generate."),
    budget: int = typer.Option(2000, "--budget", min=1, help="Pages the crawl may fetch over all sites."),
    step: int = typer.Option(10, "--step", min=1, help="R2's batch, R3's first pages per site, the quantum's turn."),
    generate_kind: str | None = typer.Option(
        None, "--generate", help=f"Write a generated site set of this kind first: {', '.join(KINDS)}."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of --generate."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Replay a budgeted crawl over recorded sites with every site policy (seed 003, BeeBot)."""
    generated = None
    if generate_kind is not None:
        if generate_kind not in KINDS:
            console.print(f"[red]--generate must be one of {', '.join(KINDS)}[/red]")
            raise typer.Exit(2)
        dump_site_rewards(generate(generate_kind, seed), sites)
        generated = {"kind": generate_kind, "seed": seed}
    try:
        payload = evaluate(sites, budget, step)
    except (OSError, SiteFileError) as exc:
        console.print(f"[red]{sites}: {exc}[/red]")
        raise typer.Exit(2) from exc
    payload["generated"] = generated
    best = payload["policies"][payload["best_fixed_rule"]]["reward"]
    rows = [
        (name, f"{figures['reward']:g}", figures["pages"], f"{figures['reward'] / best:.3f}" if best else "")
        for name in payload["ranking"]
        for figures in [payload["policies"][name]]
    ]
    title = f"{payload['sites']} sites, budget {budget} pages: reward of each policy"
    emit(as_json, payload, title, ["policy", "reward", "pages", "vs best fixed rule"], rows)


def register(app: typer.Typer) -> None:
    app.command("bandit")(run)
