"""The appearance histories of ``trawl eval freshness --suite``: generated families and the committed real one.

Three families, each unlike the others in what makes a schedule hard:

- ``simweb``: the simulated web's hubs (``libs/simweb/history_export.py``): one rhythm in UTC,
  quiet nights and weekends, about a burst a week per hub. Busy (3,000-8,000 items per key
  in 30 days).
- ``newsroom``: :func:`newsroom_history`, sixteen sections of four newsrooms working in their
  own local time (New York, London, Berlin, Tokyo), three of which move their clocks by an hour
  during the history (daylight saving time starts on 8 March in New York and on 29 March in
  Europe), so the rhythm the training days show in UTC is not the test week's; sections from
  a few items a day to dozens an hour; stories published in small batches; breaking news at
  any hour (0.5-3 h at 3-8 times the section's busiest rate, about 1.5 a week per section).
- ``commits``: real. The times commits landed on the default branch (first-parent committer
  time) of ten public repositories over twelve weeks from Monday 4 May 2026: each
  repository's commit feed is one hub page whose new items are its commits
  (``tests/data/freshness/github_commits_12_weeks.csv.gz``, sources in
  ``tests/data/freshness/SOURCES.md``). Contributors in every time zone: a weak daily
  rhythm, a weekly one, merges in bunches.

A family is a list of :class:`HistoryCase` (name, history, split, training days, the
evaluator's ``min_samples``). Generated families are seeded (Python's ``random.Random``):
the same seed gives the same history.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from services.scheduler.freshness.history import read_history_csv
from services.scheduler.freshness.rates import DAY, HOUR

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "freshness"
COMMITS_FILE = DATA / "github_commits_12_weeks.csv.gz"

# New York and the two European newsrooms start daylight saving time within the history.
NEWSROOM_START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
NEWSROOMS: tuple[tuple[str, float, float | None], ...] = (
    # name, UTC offset in hours before the change, instant of the change (+1 h after it)
    ("nytimes.test", -5.0, datetime(2026, 3, 8, 7, tzinfo=UTC).timestamp()),
    ("london.test", 0.0, datetime(2026, 3, 29, 1, tzinfo=UTC).timestamp()),
    ("berlin.test", 1.0, datetime(2026, 3, 29, 1, tzinfo=UTC).timestamp()),
    ("tokyo.test", 9.0, None),
)
SECTIONS = ("news", "world", "business", "sport")


@dataclass(frozen=True)
class HistoryCase:
    """One history of a family: what ``evaluate`` is run on, and with which split."""

    family: str
    name: str
    history: dict[str, list[float]]
    train_days: float
    min_samples: int


def _local_weight(hour: float, weekday: int, peak_shift: float, evening: float, weekend: float) -> float:
    """A newsroom's publishing rhythm at a local time: night, morning ramp, day, evening, weekend."""
    h = (hour - peak_shift) % 24.0
    if h < 5.5:
        w = 0.03
    elif h < 8.0:
        w = 0.03 + 0.97 * (h - 5.5) / 2.5
    elif h < 12.0:
        w = 1.0
    elif h < 13.0:
        w = 0.75
    elif h < 17.5:
        w = 0.9
    elif h < 22.0:
        w = evening
    else:
        w = 0.08
    return w * (weekend if weekday >= 5 else 1.0)


def newsroom_history(seed: int, days: float = 37.0) -> dict[str, list[float]]:
    """Sixteen sections of four newsrooms in their local time, with clock changes, batches and breaking news."""
    rng = random.Random(seed)
    start = NEWSROOM_START.timestamp()
    end = start + days * DAY
    out: dict[str, list[float]] = {}
    for host, offset, change in NEWSROOMS:
        for section in SECTIONS:
            peak = math.exp(rng.uniform(math.log(0.25), math.log(25.0)))  # items an hour at the busiest
            shift, evening, weekend = rng.uniform(-1.0, 1.0), rng.uniform(0.2, 0.6), rng.uniform(0.15, 0.6)
            batch = rng.uniform(0.2, 0.6)  # chance that a story brings one more with it
            times: list[float] = []
            t = start
            step = 60.0
            while t < end:  # minute by minute: a batch of stories starts with probability rate * step
                local = offset + (1.0 if change is not None and t >= change else 0.0)
                at = t + local * HOUR
                day = math.floor(at / DAY)
                weekday = (day + 3) % 7
                hour = (at - day * DAY) / HOUR
                rate = peak * _local_weight(hour, weekday, shift, evening, weekend) / HOUR
                if rng.random() < rate * step / (1.0 + batch):
                    first = t + rng.uniform(0.0, step)
                    times.append(first)
                    while rng.random() < batch:
                        times.append(first + rng.uniform(0.0, 120.0))
                t += step
            bursts = days / 7.0 * 1.5
            for _ in range(_poisson(rng, bursts)):
                begin = rng.uniform(start, end)
                length = rng.uniform(0.5, 3.0) * HOUR
                extra = peak * rng.uniform(3.0, 8.0) / HOUR
                count = _poisson(rng, extra * length)
                times.extend(begin + rng.uniform(0.0, length) for _ in range(count))
            out[f"{host}/{section}"] = sorted(x for x in times if start <= x < end)
    return out


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw (Knuth's method, split into steps so a large mean does not underflow)."""
    count, left = 0, mean
    while left > 0:
        part = min(left, 30.0)
        left -= part
        limit, product = math.exp(-part), rng.random()
        while product > limit:
            count += 1
            product *= rng.random()
    return count


def simweb_history(seed: int) -> dict[str, list[float]]:
    from libs.simweb import build_web
    from libs.simweb.history_export import history_config, hub_history

    out: dict[str, list[float]] = {}
    for key, at in hub_history(build_web(history_config(seed, hubs=8, days=37))):
        out.setdefault(key, []).append(at.timestamp())
    return out


def commits_history(path: Path = COMMITS_FILE) -> dict[str, list[float]]:
    return read_history_csv(path)


@dataclass(frozen=True)
class Family:
    """How a family's histories are made, and whether the policies' defaults were chosen on it."""

    name: str
    split: str  # "tuning" or "held-out"
    seeds: tuple[int, ...]
    make: Callable[[int], dict[str, list[float]]]
    train_days: float
    min_samples: int
    command: str  # the command that measures one history of it


FAMILIES: tuple[Family, ...] = (
    Family("simweb", "tuning", (1, 2), simweb_history, 30.0, 1000,
           "trawl eval freshness --suite --family simweb --seed S"),
    Family("newsroom", "held-out", (1, 2), newsroom_history, 30.0, 1000,
           "trawl eval freshness --suite --family newsroom --seed S"),
    Family("commits", "held-out", (0,), lambda _seed: commits_history(), 70.0, 1000,
           "trawl eval freshness --suite --family commits"),
)


def family(name: str) -> Family:
    for f in FAMILIES:
        if f.name == name:
            return f
    raise ValueError(f"unknown history family {name!r}; known: {', '.join(f.name for f in FAMILIES)}")


def cases(names: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> list[HistoryCase]:
    """The histories of the named families (all by default), each with its family's split."""
    out = []
    for f in FAMILIES if not names else [family(n) for n in names]:
        for seed in seeds if seeds is not None and f.name != "commits" else f.seeds:
            out.append(HistoryCase(f.name, f"{f.name}-{seed}", f.make(seed), f.train_days, f.min_samples))
    return out
