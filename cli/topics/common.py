"""What every ``trawl topics`` command shares: the Kafka options, output, and clear failures."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from confluent_kafka import KafkaException
from rich.table import Table

from cli.output import console
from cli.topics.target import Target, resolve_target
from libs.common.settings import SettingsError

T = TypeVar("T")

BOOTSTRAP = typer.Option(
    None, "--bootstrap", "-b", help="Kafka bootstrap servers (default: TRAWL_KAFKA_BOOTSTRAP, else the local stack)."
)
PREFIX = typer.Option(None, "--prefix", help="Topic prefix of the crawl (default: TRAWL_TOPIC_PREFIX).")
TIMEOUT = typer.Option(15.0, "--timeout", help="Seconds to wait for the broker's answers.")
AS_JSON = typer.Option(False, "--json", help="Print JSON for scripts instead of tables.")


def target_from(bootstrap: str | None, prefix: str | None) -> Target:
    try:
        return resolve_target(bootstrap, prefix, os.environ)
    except SettingsError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


@contextmanager
def talking_to(target: Target) -> Iterator[None]:
    """Turns an unreachable or failing broker into one clear line and exit status 1."""
    try:
        yield
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        detail = error.str() if hasattr(error, "str") else str(error)
        console.print(f"[red]Kafka at {target.bootstrap} (from {target.source}) failed: {detail}[/red]")
        raise typer.Exit(1) from exc
    except TimeoutError as exc:
        console.print(f"[red]Kafka at {target.bootstrap} (from {target.source}) did not answer in time[/red]")
        raise typer.Exit(1) from exc


def call(target: Target, fn: Callable[[], T]) -> T:
    with talking_to(target):
        return fn()


@dataclass(frozen=True)
class TableSpec:
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]


def show(as_json: bool, payload: dict[str, Any], tables: Sequence[TableSpec], notes: Sequence[str] = ()) -> None:
    """One JSON object (``notes`` included) for scripts, or tables and notes for people."""
    if as_json:
        print(json.dumps({**payload, "notes": list(notes)}, default=str))
        return
    for spec in tables:
        table = Table(title=spec.title)
        for column in spec.columns:
            table.add_column(column)
        for row in spec.rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {note}", highlight=False)


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"  # pragma: no cover - the loop always returns
