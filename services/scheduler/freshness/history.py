"""Appearance history: when each new item appeared, per key, from the linkbase or a CSV file.

What the freshness models need from the linkbase is small, and is stated here as a reader
protocol (:class:`SightingReader`): the children pages revealed, each with the page that
revealed it, its extracted publish date, and the previous and current fetch times of that
page. The appearance rule of seed 001 is applied here, once, whatever the source:

- the child's publish date, where the extractor found one with a time of day (a bare date,
  read as midnight UTC, tells the day but not the hour, which is what the models learn);
- else, with ``T_last`` the parent's previous fetch and ``T_now`` the one that revealed the
  child (``T_last < T_page <= T_now``): the midpoint when ``T_now - T_last`` is under an hour;
- else (a wider gap, or the parent's first fetch, with no ``T_last``): unknown, skipped.

The offline evaluator reads the same history from CSV (``key,published_at``, ISO 8601 UTC; gzip when
the file name ends in ``.gz``).
"""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from libs.common.url_keys import section_key

MIDPOINT_MAX_GAP = 3600.0


@dataclass(frozen=True)
class Sighting:
    """A child page as the linkbase knows it (times are UNIX seconds, UTC)."""

    child_url: str
    parent_url: str | None = None
    published_at: float | None = None
    previous_fetch_at: float | None = None  # T_last of the parent; None on its first fetch
    fetched_at: float | None = None  # T_now: the parent's fetch that revealed the child


@dataclass(frozen=True)
class Appearance:
    key: str
    at: float
    parent_url: str | None = None


class SightingReader(Protocol):
    """What the freshness trainer reads from the linkbase's publish-time history."""

    async def sightings(self, since: float, until: float) -> list[Sighting]:
        """Children whose publish date, or whose revealing fetch, lies in ``[since, until]``."""
        ...


def appearance_time(sighting: Sighting, max_gap: float = MIDPOINT_MAX_GAP) -> float | None:
    """When the child appeared, by the rule above, or ``None`` when it cannot be told."""
    if sighting.published_at is not None and not date_only(sighting.published_at):
        return sighting.published_at
    last, now = sighting.previous_fetch_at, sighting.fetched_at
    if last is None or now is None or now <= last or now - last >= max_gap:
        return None
    return last + (now - last) / 2.0


def date_only(published_at: float) -> bool:
    """A publish time at exactly midnight UTC is a date without a time of day (what many pages declare)."""
    return published_at % 86400 == 0


def appearances(sightings: Iterable[Sighting], since: float, until: float) -> list[Appearance]:
    """Appearances within ``[since, until]``, keyed by the child's section, one per child (the earliest)."""
    first: dict[str, Appearance] = {}
    for sighting in sightings:
        at = appearance_time(sighting)
        if at is None or not since <= at <= until:
            continue
        seen = first.get(sighting.child_url)
        if seen is None or at < seen.at:
            first[sighting.child_url] = Appearance(section_key(sighting.child_url), at, sighting.parent_url)
    return sorted(first.values(), key=lambda a: a.at)


def times_by_key(items: Iterable[Appearance]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for item in items:
        out[item.key].append(item.at)
    for times in out.values():
        times.sort()
    return dict(out)


class HistoryFileError(ValueError):
    """A history file that is not ``key,published_at`` CSV with ISO 8601 times."""


def parse_instant(text: str) -> float:
    """ISO 8601 to UNIX seconds; a time without an offset is taken as UTC."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def format_instant(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_history_csv(path: Path) -> dict[str, list[float]]:
    """Appearance times per key from a ``key,published_at`` file (gzip when its name ends in ``.gz``), sorted."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", newline="", encoding="utf-8") as packed:
            return read_history_rows(packed, str(path))
    with path.open(newline="", encoding="utf-8") as handle:
        return read_history_rows(handle, str(path))


def read_history_rows(lines: Iterable[str], name: str) -> dict[str, list[float]]:
    """Appearance times per key from the lines of a ``key,published_at`` CSV (``name`` for errors), sorted."""
    out: dict[str, list[float]] = defaultdict(list)
    reader = csv.reader(lines)
    header = [cell.strip() for cell in next(reader, [])]
    if header[:2] != ["key", "published_at"]:
        raise HistoryFileError(f"{name}: the header must be 'key,published_at', got {','.join(header)!r}")
    for number, row in enumerate(reader, start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2 or not row[0].strip():
            raise HistoryFileError(f"{name}:{number}: needs a key and a published_at")
        try:
            out[row[0].strip()].append(parse_instant(row[1]))
        except ValueError as exc:
            raise HistoryFileError(f"{name}:{number}: {row[1]!r} is not an ISO 8601 time") from exc
    for times in out.values():
        times.sort()
    return dict(out)


def write_history_csv(path: Path, rows: Sequence[tuple[str, float]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "published_at"])
        for key, at in sorted(rows, key=lambda r: (r[1], r[0])):
            writer.writerow([key, format_instant(at)])
