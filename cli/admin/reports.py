"""``trawl url show``, ``trawl top`` and ``trawl stats [hosts | topics]``."""

from __future__ import annotations

import typer

from cli.admin.tables import host_rows, policy_text, when
from cli.admin.target import ADMIN_OPTION, JSON_OPTION, session
from cli.output import console, emit

url_app = typer.Typer(help="One URL as the scheduler sees it.", no_args_is_help=True)
stats_app = typer.Typer(help="Crawl statistics (alone), or per host or topic.", invoke_without_command=True)


@url_app.command("explain")
def url_explain(url: str = typer.Argument(..., help="The URL."),
                admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """How the URL's next fetch was planned: importance, predicted rate, next fetch and why."""
    with session(admin) as client:
        reply = client.explain_url(url)
    emit(as_json, reply, "URL plan", ["field", "value"], [(k, v) for k, v in sorted(reply.items())])


@url_app.command("show")
def url_show(url: str = typer.Argument(..., help="The URL."),
             history: int = typer.Option(20, help="Most fetches and versions shown, newest first."),
             admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Status, importance, predicted change rate, next fetch, what holds it back, and its history."""
    with session(admin) as client:
        reply = client.lookup_url(url, history)
    if as_json:
        emit(True, reply, "", [], [])
        return
    importance = reply["importance"] or {}
    rate = reply["predicted_changes_per_day"]
    rows = [
        ("url", reply["url"]), ("known", reply["known"]), ("status", reply["status"]),
        ("priority", f"{reply['priority']:.6g}"),
        ("importance", f"{importance.get('importance', 0):.6g} ({importance.get('source', '')})"),
        ("predicted changes per day", "" if rate is None else f"{rate:.3g}"),
        ("next fetch", when(reply["next_fetch_at_ms"])), ("held by", "; ".join(reply["held_by"])),
        ("attempts", reply["attempts"]), ("depth", reply["depth"]), ("source", reply["source"]),
        ("discovered", when(reply["discovered_at_ms"])), ("fetched", when(reply["fetched_at_ms"])),
        ("last outcome", f"{reply['last_outcome']} {reply['http_status'] or ''} {reply['last_error']}".strip()),
        ("host policy", policy_text(reply["host_policy"])),
    ]
    emit(False, reply, "URL", ["field", "value"], rows)
    if reply["fetches"]:
        emit(False, reply, "Fetches", ["at", "status", "http", "ms", "error"],
             [(when(f["fetched_at_ms"]), f["status"], f["http_status"], f["elapsed_ms"], f["error"])
              for f in reply["fetches"]])
    if reply["versions"]:
        emit(False, reply, "Versions", ["fetched", "content fingerprint", "published"],
             [(when(v["fetched_at_ms"]), v["content_fingerprint"], when(v["published_at_ms"]))
              for v in reply["versions"]])


def top(limit: int = typer.Option(20, help="How many pages."), host: str = typer.Option("", help="Only this host."),
        admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """The most important pages (OPIC history plus cash)."""
    with session(admin) as client:
        reply = client.top_pages(limit, host)
    emit(as_json, reply, f"Top pages ({reply['source']})", ["url", "importance", "cash", "history", "status"],
         [(p["url"], f"{p['importance']:.6g}", f"{p['cash']:.6g}", f"{p['history']:.6g}", p["status"])
          for p in reply["pages"]])


@stats_app.callback()
def stats(ctx: typer.Context, admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Crawl statistics from the scheduler's admin API."""
    if ctx.invoked_subcommand is not None:
        return
    with session(admin) as client:
        reply = client.stats()
    emit(as_json, reply, "Crawl" + (" (paused)" if reply["paused"] else ""), ["status", "count"],
         sorted(reply["frontier"].items()))


@stats_app.command("hosts")
def stats_hosts(hosts: list[str] = typer.Argument(None, help="Hosts (default: the top hosts)."),
                limit: int = typer.Option(20, help="How many top hosts."),
                order_by: str = typer.Option("queued", help="queued, fetched, failed or in_flight."),
                admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Per-host counts and policies."""
    with session(admin) as client:
        reply = client.host_stats(list(hosts or []), limit, order_by)
    columns, rows = host_rows(reply["hosts"])
    emit(as_json, reply, "Hosts", columns, rows)


@stats_app.command("topics")
def stats_topics(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Messages per topic and each consumer group's lag."""
    with session(admin, timeout=30.0) as client:
        reply = client.topic_stats()
    rows = [(t["topic"], t["partitions"], t["messages"],
             ", ".join(f"{g['group']}={g['lag']}{'*' if g['clamped'] else ''}" for g in t["groups"]))
            for t in reply["topics"]]
    emit(as_json, reply, "Topics", ["topic", "partitions", "messages", "lag by group"], rows)
    if not as_json and any(g["clamped"] for t in reply["topics"] for g in t["groups"]):
        console.print("* some partition's end could not be checked: its lag shows as 0")
