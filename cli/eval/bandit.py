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
    sites: Path | None = typer.Option(None, "--sites", help="Site file (JSON lines); written first with --generate."),
    budget: int = typer.Option(2000, "--budget", min=1, help="Pages the crawl may fetch over all sites."),
    step: int = typer.Option(10, "--step", min=1, help="R2's batch, R3's first pages per site, the quantum's turn."),
    generate_kind: str | None = typer.Option(
        None, "--generate", help=f"Write a generated site set of this kind first: {', '.join(KINDS)}."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of --generate."),
    suite: bool = typer.Option(False, "--suite", help="Every family of generated site sets instead of one file."),
    family: list[str] = typer.Option([], "--family", help="With --suite: only these families (repeatable)."),
    seeds: int = typer.Option(20, "--seeds", min=1, help="With --suite: sets per family (seeds 0..N-1)."),
    tune_grid: bool = typer.Option(False, "--tune", help="With --suite: search recency's decay and floor."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Replay a budgeted crawl over recorded sites with every site policy (seed 003, BeeBot)."""
    if suite:
        _suite(budget, step, seeds, family, tune_grid, as_json)
        return
    if sites is None:
        console.print("[red]--sites is required (or --suite)[/red]")
        raise typer.Exit(2)
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


def _suite(budget: int, step: int, seeds: int, kinds: list[str], tune_grid: bool, as_json: bool) -> None:
    from cli.eval.bandit_suite import FAMILIES, run_suite, tune

    known = [kind for kind, _ in FAMILIES]
    if any(k not in known for k in kinds):
        console.print(f"[red]--family must be among {', '.join(known)}[/red]")
        raise typer.Exit(2)
    payload = run_suite(budget, step, seeds, kinds or None)
    if tune_grid:
        payload["tuning"] = tune(budget, step, seeds)
    rows = []
    for kind, f in payload["families"].items():
        per = f["recency_vs_best_rule_per_set"]
        mean = f["mean_reward"]
        rows.append((kind, f["split"], *(f"{mean[n]:g}" for n in ("r1", "r2", "r3", "quantum", "recency")),
                     f"{f['best_fixed_rule_of_family']} {f['recency_vs_family_rule']:.3f}",
                     f"{per['mean']:.3f} (worst {per['worst']:.3f}, >= 1 in {per['at_least_equal']}/{f['sets']})"))
    title = (f"{seeds} sets per family, budget {budget}: mean reward per set; recency (decay "
             f"{payload['parameters']['recency_decay']}, floor {payload['parameters']['recency_floor']}) against the"
             " best fixed rule")
    emit(as_json, payload, title, ["family", "split", "r1", "r2", "r3", "quantum", "recency",
                                   "family's best rule, recency / it", "recency / best rule of each set"], rows)
    if tune_grid and not as_json:
        chosen = payload["tuning"]["chosen"]
        console.print(f"tuning: decay {chosen['decay']}, floor {chosen['floor']} (defaults: "
                      f"{payload['tuning']['defaults']})")


def register(app: typer.Typer) -> None:
    app.command("bandit")(run)
