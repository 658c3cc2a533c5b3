"""``trawl topics peek | tail | replay-dead-letters``: records decoded for people, dead letters sent back."""

from __future__ import annotations

import json
import os
from collections import deque
from typing import Any

import typer

from cli.output import console
from cli.topics.common import AS_JSON, BOOTSTRAP, PREFIX, TIMEOUT, TableSpec, call, show, talking_to, target_from
from cli.topics.decode import iso_ms, record_json
from cli.topics.inventory import topic_names
from cli.topics.locate import key_for_url
from cli.topics.reader import (
    BadStart,
    RecordFilter,
    StartAt,
    parse_time,
    partitions_to_read,
    read_records,
    start_offsets,
)
from cli.topics.replay import LetterFilter, replay, scan_letters
from cli.topics.target import Target
from libs.common.urls import InvalidUrl, normalize_url

TOPIC = typer.Argument(..., help="Topic: a declared name (trawl.fetch-requests) or any topic on the broker.")
PARTITION = typer.Option(None, "--partition", "-p", help="Only this partition.")
OFFSET = typer.Option(None, "--offset", help="Start at this offset (in each partition read).")
SINCE = typer.Option(None, "--since", help="Start at this time: ISO 8601 (UTC unless it says) or 15m, 2h, 1d ago.")
LAST = typer.Option(None, "--last", help="Start this many records before the end of each partition "
                    "(peek with --key or --url: the last N matching records).")
KEY = typer.Option(None, "--key", "-k", help="Only records with this key (reads only the partition it maps to).")
URL = typer.Option(None, "--url", help="Only records about this URL (by the topic's key for it, and the value's url).")
FULL = typer.Option(False, "--full", help="Do not shorten long strings and bytes.")


def _start(offset: int | None, since: str | None, last: int | None, default: StartAt) -> tuple[StartAt, int | None]:
    given = [name for name, value in (("--offset", offset), ("--since", since), ("--last", last)) if value is not None]
    if len(given) > 1:
        raise BadStart(f"give one start, not {' and '.join(given)}")
    if offset is not None:
        return StartAt("offset", offset), None
    if since is not None:
        at = parse_time(since)
        return StartAt("time", at), at
    if last is not None:
        return StartAt("end", max(0, last)), None
    return default, None


def _plan(target: Target, topic_arg: str, partition: int | None, key: str | None, url: str | None,
          start: StartAt, since_ms: int | None, timeout: float) -> tuple[Any, dict[tuple[str, int], int], RecordFilter]:
    name = target.full_name(topic_arg)
    counts = topic_names(target, timeout, include_internal=True)
    if name not in counts:
        raise BadStart(f"no topic {name} on {target.bootstrap}")
    topic = target.declared(name)
    wanted_url = None
    if url is not None:
        wanted_url = normalize_url(url)
        if key is None and topic is not None:
            # Narrows the read to one partition where the URL gives the key.
            key = key_for_url(topic, wanted_url, target.large_hosts)
    parts = partitions_to_read(counts[name], partition, key)
    starts = start_offsets(target, name, parts, start, timeout)
    return topic, starts, RecordFilter(key=key, url=wanted_url, since_ms=since_ms)


def _line(record: dict[str, Any]) -> str:
    where = f"{record['topic']}[{record['partition']}]@{record['offset']}"
    body = (f"UNDECODABLE ({record['undecodable']}): {record['value_preview']}" if "undecodable" in record
            else json.dumps(record["value"], ensure_ascii=False))
    extra = f" [{record['unknown_fields']} unknown field(s)]" if record.get("unknown_fields") else ""
    return f"{where} {record['timestamp'] or '-'} key={record['key']!r} {record['type'] or ''}{extra} {body}"


def peek(
    topic: str = TOPIC, partition: int | None = PARTITION, offset: int | None = OFFSET, since: str | None = SINCE,
    last: int | None = LAST, key: str | None = KEY, url: str | None = URL,
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="At most this many records."),
    full: bool = FULL, bootstrap: str | None = BOOTSTRAP, prefix: str | None = PREFIX,
    timeout: float = typer.Option(30.0, "--timeout", help="Stop reading after this many seconds."),
    as_json: bool = AS_JSON,
) -> None:
    """Records of a topic from the beginning (or an offset, a time, the end), decoded to JSON; then stop."""
    target = target_from(bootstrap, prefix)
    # The last N records *with a key or URL* are somewhere in the partition: read it all, keep N.
    keep_last = last if last is not None and (key is not None or url is not None) else None
    try:
        start, since_ms = _start(offset, since, last, StartAt("beginning"))
        if keep_last is not None:
            start = StartAt("beginning")
        declared, starts, record_filter = call(
            target, lambda: _plan(target, topic, partition, key, url, start, since_ms, timeout))
    except (BadStart, InvalidUrl) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    with talking_to(target):
        found = read_records(target, starts, topic=declared, record_filter=record_filter,
                             limit=limit if keep_last is None else None, follow=False, timeout=timeout)
        chosen = list(found) if keep_last is None else list(deque(found, maxlen=keep_last))[:limit]
        records = [record_json(msg, declared, None if full else 200) for msg in chosen]
    notes = [] if declared is not None else [f"{topic} is not a declared topic: values are shown as bytes"]
    if keep_last is not None:
        notes.append(f"the last {keep_last} matching record(s): the partition was read from its start")
    undecodable = sum("undecodable" in r for r in records)
    if undecodable and declared is not None:
        notes.append(f"{undecodable} record(s) are not valid {declared.message_type.DESCRIPTOR.name} messages")
    rows = [(r["partition"], r["offset"], r["timestamp"], r["key"],
             f"UNDECODABLE ({r['undecodable']}): {r['value_preview']}" if "undecodable" in r
             else json.dumps(r["value"], ensure_ascii=False)) for r in records]
    show(as_json, {"topic": target.full_name(topic), "starts": [{"partition": p, "offset": o} for (_, p), o in
                                                                 sorted(starts.items())], "records": records},
         [TableSpec(f"{target.full_name(topic)}: {len(records)} record(s)",
                    ["partition", "offset", "time", "key", "value"], rows)], notes)


def tail(
    topic: str = TOPIC, partition: int | None = PARTITION, offset: int | None = OFFSET, since: str | None = SINCE,
    last: int | None = LAST, key: str | None = KEY, url: str | None = URL,
    limit: int | None = typer.Option(None, "--limit", "-n", min=0, help="Stop after this many records."),
    seconds: float | None = typer.Option(None, "--for", help="Stop after this many seconds (default: Ctrl-C)."),
    full: bool = FULL, bootstrap: str | None = BOOTSTRAP, prefix: str | None = PREFIX,
    timeout: float = TIMEOUT, as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """Follow a topic from its end (or an offset, a time), printing each record decoded as it arrives."""
    target = target_from(bootstrap, prefix)
    try:
        start, since_ms = _start(offset, since, last, StartAt("end"))
        declared, starts, record_filter = call(
            target, lambda: _plan(target, topic, partition, key, url, start, since_ms, timeout))
    except (BadStart, InvalidUrl) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    try:
        with talking_to(target):
            for msg in read_records(target, starts, topic=declared, record_filter=record_filter, limit=limit,
                                    follow=True, timeout=seconds):
                record = record_json(msg, declared, None if full else 200)
                print(json.dumps(record, default=str, ensure_ascii=False) if as_json else _line(record), flush=True)
    except KeyboardInterrupt:
        pass


def replay_dead_letters(
    source_topic: str | None = typer.Option(None, "--source-topic", help="Only letters from this topic."),
    partition: int | None = typer.Option(None, "--partition", "-p", help="Only letters from this source partition."),
    from_offset: int | None = typer.Option(None, "--from-offset", help="Only source offsets from this one."),
    to_offset: int | None = typer.Option(None, "--to-offset", help="Only source offsets up to this one (inclusive)."),
    service: str | None = typer.Option(None, "--service", help="Only letters this service gave up on."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be replayed; produce nothing."),
    include_unsound: bool = typer.Option(
        False, "--include-unsound", help="Also replay letters whose value is undecodable or was cut."),
    bootstrap: str | None = BOOTSTRAP, prefix: str | None = PREFIX, timeout: float = TIMEOUT,
    as_json: bool = AS_JSON,
) -> None:
    """Produce dead letters' original key and value to their source topic again (after a fix)."""
    target = target_from(bootstrap, prefix)
    letter_filter = LetterFilter(None if source_topic is None else target.full_name(source_topic), partition,
                                 from_offset, to_offset, service)

    def run() -> list[Any]:
        topics = set(topic_names(target, timeout, include_internal=True))
        letters = scan_letters(target, letter_filter, topics, timeout)
        config = target.kafka_settings(os.environ).producer_config("trawl-replay")
        return replay(letters, config, dry_run=dry_run, include_unsound=include_unsound, timeout=timeout)

    try:
        letters = call(target, run)
    except RuntimeError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from exc
    done = sum(x.action in ("replayed", "would replay") for x in letters)
    verb = "would replay" if dry_run else "replayed"
    notes = [f"{verb} {done} of {len(letters)} matching dead letter(s)"]
    if any(x.action == "skipped" and not x.fatal for x in letters):
        notes.append("skipped letters would fail again as they are; --include-unsound replays them anyway")
    rows = [(x.offset, f"{x.letter.source_topic}[{x.letter.source_partition}]@{x.letter.source_offset}",
             x.letter.key.decode("utf-8", "replace"), x.letter.service,
             iso_ms(x.letter.failed_at_ms) if x.letter.failed_at_ms else "-", x.letter.error[:80],
             x.action + (f": {x.problem}" if x.problem else "")) for x in letters]
    show(as_json, {"dry_run": dry_run, "letters": [x.as_json() for x in letters], "replayed": 0 if dry_run else done},
         [TableSpec("Dead letters", ["letter", "source", "key", "service", "failed at", "error", "action"], rows)],
         notes)


def register(app: typer.Typer) -> None:
    app.command("peek")(peek)
    app.command("tail")(tail)
    app.command("replay-dead-letters")(replay_dead_letters)
