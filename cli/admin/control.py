"""``trawl pause | resume | drain`` and ``trawl goal show | set | stop | reset``."""

from __future__ import annotations

from typing import Any

import typer

from cli.admin.target import ADMIN_OPTION, JSON_OPTION, session
from cli.output import console, emit

goal_app = typer.Typer(help="The crawl goal: a site policy over a set of sites (docs/evaluation.md).",
                       no_args_is_help=True)


def _state(as_json: bool, reply: dict[str, Any], word: str) -> None:
    if as_json:
        emit(True, reply, "", [], [])
    else:
        console.print(f"{word} ({reply['in_flight']} in flight)")


def pause(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Stop emitting fetch requests (in-flight ones finish)."""
    with session(admin) as client:
        _state(as_json, client.set_paused(True), "paused")


def resume(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Resume emitting fetch requests."""
    with session(admin) as client:
        _state(as_json, client.set_paused(False), "resumed")


def drain(wait: float = typer.Option(60.0, help="Seconds to wait for the requests in flight (at most 600)."),
          admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Pause, then wait until nothing is in flight (safe to stop the fetchers); exit 1 if that takes too long."""
    with session(admin) as client:
        reply = client.drain(wait)
    _state(as_json, reply, "drained" if reply["drained"] else "paused, not drained yet")
    if not reply["drained"]:
        raise typer.Exit(1)


def _show(as_json: bool, reply: dict[str, Any]) -> None:
    goal = reply["goal"] or {}
    title = f"Crawl goal ({reply['source']}): " + (
        f"{goal['policy']} for {goal['goal']}, budget {goal['budget'] or 'none'}, spent {reply['spent']}"
        if goal.get("policy") else "none")
    emit(as_json, reply, title, ["site", "pages", "in flight", "reward", "has work", "chosen"],
         [(s["site"], s["pulls"], s["in_flight"], f"{s['reward']:g}", s["has_work"], s["chosen"])
          for s in reply["sites"]])


@goal_app.command("show")
def goal_show(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """The goal in force and its sites' statistics."""
    with session(admin) as client:
        _show(as_json, client.crawl_goal())


@goal_app.command("set")
def goal_set(
    policy: str = typer.Option(..., help="Site policy: r1, r2, r3, quantum or recency."),
    sites: list[str] = typer.Option(..., "--site", help="A site (host) of the goal; repeat in the policy's order."),
    goal: str = typer.Option("", help="Reward of a page: documents (1 a page fetched), new_urls (URLs first"
                             " found on it) or external_links (links to other registered domains on it);"
                             " default: as now."),
    budget: int = typer.Option(0, help="Pages over the goal's sites; 0: no limit."),
    step: int = typer.Option(0, help="Pages of a step of the fixed rules (default: as now)."),
    parallel: int = typer.Option(0, help="Choices per dispatch round (default: as now)."),
    admin: str = ADMIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Set the crawl goal (it replaces the settings' goal on every scheduler replica)."""
    with session(admin) as client:
        _show(as_json, client.set_crawl_goal(policy, goal, sites, budget, step, parallel))


@goal_app.command("stop")
def goal_stop(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """No goal: every host is dispatched as usual (whatever the settings say)."""
    with session(admin) as client:
        _show(as_json, client.set_crawl_goal(policy=""))


@goal_app.command("reset")
def goal_reset(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Forget the goal set here: the settings' goal (TRAWL_SCHEDULER_BANDIT_*) applies again."""
    with session(admin) as client:
        _show(as_json, client.set_crawl_goal(reset=True))
