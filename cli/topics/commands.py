"""``trawl topics list | groups | locate``: what is on the broker, who reads it, where a URL goes."""

from __future__ import annotations

import typer

from cli.output import console
from cli.topics.common import AS_JSON, BOOTSTRAP, PREFIX, TIMEOUT, TableSpec, call, human_bytes, show, target_from
from cli.topics.groups import readers_of, report_groups
from cli.topics.inventory import summarize, topic_names
from cli.topics.locate import locate
from libs.common.urls import InvalidUrl

SIZE_NOTE = "sizes are estimates: key + value bytes of the newest {sample} records per partition, times the count"


def list_topics(
    bootstrap: str | None = BOOTSTRAP,
    prefix: str | None = PREFIX,
    sample: int = typer.Option(20, "--sample", min=1, help="Newest records per partition read to estimate sizes."),
    declared_only: bool = typer.Option(False, "--declared-only", help="Only the topics Trawl declares."),
    include_internal: bool = typer.Option(False, "--internal", help="Also the broker's internal __* topics."),
    timeout: float = TIMEOUT,
    as_json: bool = AS_JSON,
) -> None:
    """Topics with their partitions, message counts, estimated sizes and declared types."""
    target = target_from(bootstrap, prefix)
    topics = call(target, lambda: summarize(target, sample=sample, timeout=timeout, only_declared=declared_only,
                                            include_internal=include_internal))
    notes = [SIZE_NOTE.format(sample=sample)]
    wrong = [t for t in topics if t.declared_partitions not in (None, len(t.partitions))]
    for t in wrong:
        notes.append(f"{t.name} has {len(t.partitions)} partitions, declared {t.declared_partitions}")
    corrected = sum(t.corrected for t in topics)
    if corrected:
        notes.append(f"{corrected} partition(s) hold data past the high watermark the broker reported (Tansu does "
                     "after batched produces): counts are read from the data")
    unverified = sum(t.unverified for t in topics)
    if unverified:
        notes.append(f"{unverified} partition end(s) could not be read within {timeout:.0f}s: counts use the "
                     "broker's high watermark there")
    rows = [(t.name, t.message_type or "-", t.key or "-", len(t.partitions), t.messages, human_bytes(t.estimated_bytes))
            for t in topics]
    show(as_json, {"bootstrap": target.bootstrap, "prefix": target.prefix, "topics": [t.as_json() for t in topics]},
         [TableSpec(f"Topics on {target.bootstrap}", ["topic", "type", "key", "partitions", "messages", "size (est.)"],
                    rows)], notes)


def groups(
    names: list[str] = typer.Argument(None, help="Consumer groups to show (default: all)."),
    bootstrap: str | None = BOOTSTRAP,
    prefix: str | None = PREFIX,
    summary: bool = typer.Option(False, "--summary", help="One line per group, no partitions."),
    lagging: bool = typer.Option(False, "--lagging", help="Only partitions with lag."),
    timeout: float = TIMEOUT,
    as_json: bool = AS_JSON,
) -> None:
    """Consumer groups: lag per partition and per group, and which member owns which partition."""
    target = target_from(bootstrap, prefix)
    view = call(target, lambda: report_groups(target, list(names or []) or None, timeout=timeout))
    missing = sorted(set(names or []) - {r.group for r in view.reports})
    notes = [f"no consumer group named {g}" for g in missing] + view.notes()
    tables = [TableSpec("Consumer groups", ["group", "state", "members", "partitions", "lag"],
                        [(r.group, r.state, len(r.members), len(r.partitions), r.lag) for r in view.reports])]
    if not summary:
        rows = [
            (r.group, p.topic, p.partition, p.committed if p.committed >= 0 else "-", p.high_watermark,
             f"{p.lag} (clamped)" if p.clamped else p.lag, r.owners.get((p.topic, p.partition), "?"))
            for r in view.reports for p in r.partitions if p.lag or p.clamped or not lagging
        ]
        columns = ["group", "topic", "partition", "committed", "end", "lag", "owner"]
        tables.append(TableSpec("Partitions", columns, rows))
    show(as_json, {"bootstrap": target.bootstrap, "groups": [r.as_json() for r in view.reports]}, tables, notes)
    if missing and not view.reports:
        raise typer.Exit(1)


def locate_url(
    url: str = typer.Argument(..., help="The URL to locate."),
    bootstrap: str | None = BOOTSTRAP,
    prefix: str | None = PREFIX,
    offline: bool = typer.Option(False, "--offline", help="Use the declared partition counts; ask no broker."),
    timeout: float = TIMEOUT,
    as_json: bool = AS_JSON,
) -> None:
    """Where a URL's messages are: each topic's key for it, that key's partition, and who reads it."""
    target = target_from(bootstrap, prefix)
    counts: dict[str, int] = {}
    if not offline:
        on_broker = call(target, lambda: topic_names(target, timeout))
        counts = {declared.name: n for name, n in on_broker.items() if (declared := target.declared(name))}
    try:
        normalised, places = locate(url, counts, target.large_hosts)
    except InvalidUrl as exc:
        console.print(f"[red]{url!r} is not a URL the crawler accepts: {exc.reason}[/red]")
        raise typer.Exit(2) from exc
    tps = [(target.prefix + p.topic, partition) for p in places
           for partition in ((p.partition,) if p.partition is not None else p.candidates)]
    readers = [] if offline else call(target, lambda: readers_of(target, tps, timeout))
    payload = {
        "url": normalised,
        "topics": [{"topic": target.prefix + p.topic, "key_kind": p.key_kind, "key": p.key, "partition": p.partition,
                    "candidates": list(p.candidates), "partitions": p.partitions} for p in places],
        "consumers": [r.as_json() for r in readers],
    }
    tables = [TableSpec(f"Where {normalised} goes", ["topic", "key", "key value", "partition"],
                        [(target.prefix + p.topic, p.key_kind, p.key or "(not given by the URL)",
                          _where(p.partition, p.candidates, p.partitions)) for p in places])]
    if readers:
        tables.append(TableSpec("Who reads those partitions", ["topic", "partition", "group", "committed", "lag",
                                                                "owner"],
                                [(r.lag.topic, r.lag.partition, r.lag.group,
                                  r.lag.committed if r.lag.committed >= 0 else "-", r.lag.lag, r.owner or "?")
                                 for r in readers]))
    show(as_json, payload, tables, [] if offline or readers else ["no consumer group has committed on these "
                                                                   "partitions yet"])


def _where(partition: int | None, candidates: tuple[int, ...], partitions: int) -> str:
    if partition is not None:
        return f"{partition} of {partitions}"
    if candidates:
        return f"one of {', '.join(map(str, candidates))} (of {partitions})"
    return "-"


def register(app: typer.Typer) -> None:
    app.command("list")(list_topics)
    app.command("groups")(groups)
    app.command("locate")(locate_url)
