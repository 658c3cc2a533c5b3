"""``trawl seeds add | remove | list`` and ``trawl sites add | remove | list``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from cli.admin.tables import host_rows, when
from cli.admin.target import ADMIN_OPTION, JSON_OPTION, session
from cli.output import emit

seeds_app = typer.Typer(help="Seed URLs in the frontier.", no_args_is_help=True)
sites_app = typer.Typer(help="Sites: hosts crawled as a whole, added and removed by name.", no_args_is_help=True)

URLS = typer.Argument(None, help="URLs.")
FILE = typer.Option(None, "--file", "-f", help="A file with one URL per line.")


def _items(args: list[str] | None, file: Path | None) -> list[str]:
    items = list(args or [])
    if file is not None:
        items += [line.strip() for line in file.read_text().splitlines() if line.strip()]
    return items


def _rejected(reply: dict[str, Any]) -> int:
    return len(reply["rejected"])


@seeds_app.command("add")
def seeds_add(urls: list[str] = URLS, file: Path | None = FILE, admin: str = ADMIN_OPTION,
              as_json: bool = JSON_OPTION) -> None:
    """Add seed URLs to the crawl."""
    with session(admin) as client:
        reply = client.add_seeds(_items(urls, file))
    emit(as_json, reply, "Seeds", ["accepted", "already known", "rejected"],
         [(reply["accepted"], reply["already_known"], _rejected(reply))])


@seeds_app.command("remove")
def seeds_remove(urls: list[str] = URLS, file: Path | None = FILE, admin: str = ADMIN_OPTION,
                 as_json: bool = JSON_OPTION) -> None:
    """Remove URLs from the frontier (a URL in flight is left to finish: remove it again later)."""
    with session(admin) as client:
        reply = client.remove_seeds(_items(urls, file))
    emit(as_json, reply, "Removed", ["removed", "not found", "in flight", "rejected"],
         [(reply["removed"], reply["not_found"], len(reply["in_flight"]), _rejected(reply))])


@seeds_app.command("list")
def seeds_list(limit: int = typer.Option(100, help="Most seeds shown, newest first."),
               host: str = typer.Option("", help="Only this host's seeds."),
               admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """The seeds in the frontier, newest first."""
    with session(admin) as client:
        reply = client.list_seeds(limit, host)
    emit(as_json, reply, f"Seeds ({reply['total']} in all)", ["url", "status", "added", "fetched"],
         [(s["url"], s["status"], when(s["added_at_ms"]), when(s["fetched_at_ms"])) for s in reply["seeds"]])


@sites_app.command("add")
def sites_add(start_urls: list[str] = typer.Argument(..., help="Start URLs, or host names (their home page)."),
              admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Add sites: their start URLs become seeds and an earlier removal is lifted."""
    with session(admin) as client:
        reply = client.add_sites(start_urls)
    emit(as_json, reply, "Sites added", ["hosts", "new URLs", "rejected"],
         [(", ".join(reply["hosts"]), reply["urls_accepted"], _rejected(reply))])


@sites_app.command("remove")
def sites_remove(hosts: list[str] = typer.Argument(..., help="Host names."),
                 admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Remove sites: their queued URLs are dropped and the hosts held until added again."""
    with session(admin) as client:
        reply = client.remove_sites(hosts)
    emit(as_json, reply, "Sites removed", ["hosts", "queued URLs dropped"],
         [(", ".join(reply["hosts"]), reply["urls_removed"])])


@sites_app.command("list")
def sites_list(admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Every site added or removed, with its counts."""
    with session(admin) as client:
        reply = client.list_sites()
    columns, rows = host_rows(reply["hosts"])
    emit(as_json, reply, "Sites", columns, rows)
