"""What every benchmark shares: a throwaway PostgreSQL, interleaved repetitions, the report.

A benchmark compares Trawl's way of doing something with a baseline measured in the same
run on the same machine. Repetitions alternate the two (A B, then B A, ...), so a drift of
the machine's speed, which is common on a shared machine, falls on both alike; the figure
quoted is the median of the repetitions, and the ratio is that of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from libs.localinfra import LocalPostgres, create_database, drop_database, dsn_with_database, free_port

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Series:
    """The rates one contender reached, one per repetition."""

    name: str
    rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates) if self.rates else 0.0


@dataclass
class Comparison:
    """A measured contender against its baseline, in one unit (higher is better)."""

    benchmark: str
    unit: str
    contender: Series
    baseline: Series
    workload: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.contender.median / self.baseline.median if self.baseline.median else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "unit": self.unit,
            "contender": {**asdict(self.contender), "median": self.contender.median},
            "baseline": {**asdict(self.baseline), "median": self.baseline.median},
            "ratio": self.ratio,
            "workload": self.workload,
            "notes": self.notes,
            "machine": machine(),
        }


def machine() -> dict[str, Any]:
    """Where the figures were measured (a benchmark's figures mean nothing without it)."""
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "load_average_1m_at_end": round(load[0], 2),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


async def interleaved(
    contender: Callable[[], Awaitable[float]],
    baseline: Callable[[], Awaitable[float]],
    repeat: int,
    names: tuple[str, str],
    progress: bool = True,
) -> tuple[Series, Series]:
    """Runs each ``repeat`` times, alternating which goes first; each call returns its rate."""
    a, b = Series(names[0]), Series(names[1])
    for i in range(repeat):
        order = [(a, contender), (b, baseline)]
        if i % 2:
            order.reverse()
        for series, run in order:
            rate = await run()
            series.rates.append(rate)
            if progress:
                print(f"  repetition {i + 1}/{repeat}: {series.name}: {rate:,.1f}", file=sys.stderr, flush=True)
    return a, b


def print_table(result: Comparison) -> None:
    """The comparison as a small plain-text table, on stdout."""
    rows = [
        (result.contender.name, result.contender),
        (f"baseline: {result.baseline.name}", result.baseline),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{result.benchmark}: {result.unit} (median of {len(result.contender.rates)} interleaved repetitions)")
    print(f"  workload: {', '.join(f'{k}={v}' for k, v in result.workload.items())}")
    header = f"  {'':<{width}}  {'median':>12}  {'min':>12}  {'max':>12}"
    print(header)
    for name, series in rows:
        print(
            f"  {name:<{width}}  {series.median:>12,.1f}  {min(series.rates):>12,.1f}  {max(series.rates):>12,.1f}"
        )
    print(f"  ratio (median / baseline median): {result.ratio:.2f}x")
    for note in result.notes:
        print(f"  note: {note}")
    info = machine()
    print(f"  machine: {info['cpus']} cpus, Python {info['python']}, load {info['load_average_1m_at_end']}")


def report(result: Comparison, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        print_table(result)


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=3, help="Repetitions of each contender (interleaved).")
    parser.add_argument("--json", action="store_true", help="Print the result as JSON instead of a table.")
    return parser


def add_postgres_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fast",
        action="store_true",
        help="Run PostgreSQL with fsync and synchronous_commit off (default: durable, as in production).",
    )


@contextmanager
def throwaway_postgres(fast: bool) -> Iterator[LocalPostgres]:
    """A PostgreSQL server of its own in a new folder under /var/tmp, stopped and removed afterwards.

    The folder is opened up (0755) so that the unprivileged server account can enter it
    when the benchmark runs as root.
    """
    root = Path(tempfile.mkdtemp(prefix="trawl-bench-", dir="/var/tmp"))
    root.chmod(0o755)
    server = LocalPostgres(root / "pgdata", free_port(), fast=fast)
    try:
        server.ensure_started()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def fresh_database(server: LocalPostgres, name: str, template: str | None = None) -> Iterator[str]:
    """A new database on ``server`` (a copy of ``template`` when given), dropped afterwards."""
    admin = server.dsn("postgres")
    drop_database(admin, name)
    if template is None:
        create_database(admin, name)
    else:
        import psycopg
        from psycopg import sql

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
            )
    try:
        yield dsn_with_database(admin, name)
    finally:
        drop_database(admin, name)


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
