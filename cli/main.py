"""``trawl``: the command-line tool of Trawl (local stack, the admin API's commands, status, demo)."""

from __future__ import annotations

import json
import logging
import os
import sys

import typer

from cli.admin import control, reports
from cli.admin.hosts import hosts_app
from cli.admin.seeds import seeds_app, sites_app
from cli.eval import app as eval_app
from cli.output import console, emit
from cli.stack import local_stack
from cli.stack.layout import StackSettings, StackState, state_path
from cli.topics import app as topics_app
from libs.common.settings import SettingsError, load_settings

app = typer.Typer(help="Trawl: a continuous, distributed web crawler.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
app.add_typer(seeds_app, name="seeds")
app.add_typer(sites_app, name="sites")
app.add_typer(hosts_app, name="hosts")
app.add_typer(reports.url_app, name="url")
app.add_typer(reports.stats_app, name="stats")
app.add_typer(control.goal_app, name="goal")
app.add_typer(eval_app, name="eval")
app.add_typer(topics_app, name="topics")


def _stack() -> StackSettings:
    try:
        return load_settings(StackSettings, os.environ)
    except SettingsError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


def _state(settings: StackSettings) -> StackState:
    state = StackState.load(state_path(settings))
    if state is None:
        console.print(f"[red]no local stack in {settings.root}; run `trawl up` first[/red]")
        raise typer.Exit(1)
    return state


@app.command()
def up(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Start the broker, PostgreSQL, topics, schemas and the six services (safe to run twice)."""
    settings = _stack()
    state = local_stack.up(settings, os.environ)
    rows = [("broker", state.bootstrap), ("postgres", state.dsn)]
    rows += [(name, f"127.0.0.1:{port}") for name, port in state.grpc_ports.items()]
    token_file = local_stack.admin_token_path(settings)
    rows.append(("admin token", str(token_file)))
    emit(as_json, {"bootstrap": state.bootstrap, "dsn": state.dsn, "grpc": state.grpc_ports,
                   "home": str(settings.root), "admin_token_file": str(token_file)},
         "Trawl is up", ["part", "listens on"], rows)


@app.command()
def down(as_json: bool = typer.Option(False, "--json")) -> None:
    """Stop the services (drained), the broker and PostgreSQL."""
    stopped = local_stack.down(_stack())
    emit(as_json, {"stopped": stopped}, "Trawl is down", ["stopped"], [(s,) for s in stopped] or [("nothing",)])


@app.command()
def status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Each part of the local stack: process, address, health, consumer lag."""
    settings = _stack()
    parts = local_stack.status(settings)
    lags = local_stack.lag_by_group(settings)
    payload = {
        "parts": [{"name": p.name, "pid": p.pid, "address": p.address, "health": p.health} for p in parts],
        "lag": lags,
    }
    rows = [(p.name, p.pid, p.address, p.health, lags.get(p.name, "")) for p in parts]
    emit(as_json, payload, "Trawl status", ["part", "pid", "address", "health", "lag"], rows)


@app.command()
def demo(
    hosts: int = typer.Option(60, help="Hosts of the simulated web."),
    pages: int = typer.Option(5000, help="Pages of the simulated web."),
    seed: int = typer.Option(7, help="Seed of the simulated web's generator."),
    timeout: float = typer.Option(600.0, help="Give up after this many seconds."),
    keep_up: bool = typer.Option(False, "--keep-up", help="Leave the stack running afterwards."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Crawl the built-in simulated web on the local stack, show progress, print a summary."""
    from cli.demo import demo_failures, run_demo

    summary = run_demo(_stack(), os.environ, hosts=hosts, pages=pages, seed=seed, timeout=timeout,
                       keep_up=keep_up, quiet=as_json)
    if as_json:
        print(json.dumps(summary, default=str))
    if failures := demo_failures(summary):
        for failure in failures:
            print(f"trawl demo: {failure}", file=sys.stderr)
        raise typer.Exit(1)


@app.command()
def crawl(
    urls: list[str] = typer.Argument(..., help="Seed URLs on the real web."),
    max_pages: int = typer.Option(200, help="Stop after this many pages."),
    timeout: float = typer.Option(300.0, help="Give up after this many seconds."),
) -> None:
    """Crawl real seed URLs on the local stack (needs internet access)."""
    from cli.demo import run_real_crawl

    code = run_real_crawl(_stack(), os.environ, urls, max_pages=max_pages, timeout=timeout)
    raise typer.Exit(code)


app.command("pause")(control.pause)
app.command("resume")(control.resume)
app.command("drain")(control.drain)
app.command("top")(reports.top)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    app()


if __name__ == "__main__":
    main()
