"""``trawl hosts policy set | show | clear``: an operator's rules for one host."""

from __future__ import annotations

from datetime import UTC, datetime

import typer

from cli.admin.tables import policy_text, when
from cli.admin.target import ADMIN_OPTION, JSON_OPTION, session
from cli.output import console, emit

hosts_app = typer.Typer(help="Per-host policies.", no_args_is_help=True)
policy_app = typer.Typer(help="Delay, concurrency, budget, block and path partitioning of a host.",
                         no_args_is_help=True)
hosts_app.add_typer(policy_app, name="policy")


def _until_ms(block_until: str, block_for: float | None, unblock: bool) -> int | None:
    """The blocked_until_ms to send: 0 lifts a block, None leaves it as it is."""
    if unblock:
        return 0
    if block_for is not None:
        return int((datetime.now(UTC).timestamp() + block_for) * 1000)
    if block_until:
        try:
            at = datetime.fromisoformat(block_until.replace("Z", "+00:00"))
        except ValueError as exc:
            console.print(f"[red]--block-until {block_until!r} is not an ISO 8601 time[/red]")
            raise typer.Exit(2) from exc
        return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)
    return None


@policy_app.command("set")
def policy_set(
    host: str = typer.Argument(..., help="Host name."),
    delay: float | None = typer.Option(None, "--delay", help="Least seconds between two requests (0 lifts it)."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="Most requests in flight (0 holds the host, -1 lifts the limit)."
    ),
    budget: int | None = typer.Option(None, "--budget", help="Most pages fetched from the host (-1 lifts it)."),
    block_until: str = typer.Option("", "--block-until", help="No request before this ISO 8601 time (UTC)."),
    block_for: float | None = typer.Option(None, "--block-for", help="No request for this many seconds."),
    unblock: bool = typer.Option(False, "--unblock", help="Lift a block."),
    groups: int | None = typer.Option(
        None, "--partition-groups", help="Split the host by path across this many fetchers (1: not split)."
    ),
    note: str | None = typer.Option(None, "--note", help="Why, for the next operator."),
    replace: bool = typer.Option(False, "--replace", help="Clear every field not given here."),
    admin: str = ADMIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Set fields of a host's policy (the others are kept unless --replace)."""
    with session(admin) as client:
        reply = client.set_host_policy(
            host, replace, min_delay_seconds=delay, max_concurrency=concurrency, budget=budget,
            blocked_until_ms=_until_ms(block_until, block_for, unblock), partition_groups=groups, note=note,
        )
    emit(as_json, reply, "Host policy", ["host", "policy", "fetched", "updated"],
         [(reply["host"], policy_text(reply), reply["fetched"], when(reply["updated_at_ms"]))])


@policy_app.command("show")
def policy_show(hosts: list[str] = typer.Argument(None, help="Hosts (default: every host with a policy)."),
                admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """The policies of the named hosts, or every policy."""
    with session(admin) as client:
        reply = client.host_policies(list(hosts or []))
    emit(as_json, reply, "Host policies", ["host", "policy", "fetched", "updated"],
         [(p["host"], policy_text(p), p["fetched"], when(p["updated_at_ms"])) for p in reply["policies"]])


@policy_app.command("clear")
def policy_clear(hosts: list[str] = typer.Argument(..., help="Hosts."),
                 admin: str = ADMIN_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Forget the hosts' policies (a removed site stays removed: `trawl sites add` lifts that)."""
    with session(admin) as client:
        reply = client.clear_host_policies(hosts)
    emit(as_json, reply, "Host policies cleared", ["cleared"], [(reply["cleared"],)])
