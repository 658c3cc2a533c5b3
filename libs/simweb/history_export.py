"""Appearance histories of the simulated web's hubs, as the CSV ``trawl eval freshness`` reads.

    python -m libs.simweb.history_export --seed 3 --hubs 8 --days 37 --out history.csv

One row per hub article: ``key,published_at``, the key being the article's host and first
path segment (``site-003.test/news``), the time ISO 8601 UTC. The web is built with
:func:`~libs.simweb.rhythm.rhythmic_config` (daily and weekly cycles, quiet nights and
weekends, per-hub shifts, bursts) and one hub per host, starting on a Monday.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from libs.common.url_keys import section_key
from libs.simweb.build import build_web
from libs.simweb.config import SimWebConfig
from libs.simweb.rhythm import rhythmic_config
from libs.simweb.web import SimWeb

HISTORY_START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday


def history_config(seed: int, hubs: int = 8, days: float = 37.0, rate: float = 20.0,
                   **overrides: object) -> SimWebConfig:
    """A web of ``hubs`` hosts with one hub each, publishing for ``days`` days from :data:`HISTORY_START`."""
    values: dict[str, object] = {
        "seed": seed, "hosts": hubs, "pages": hubs, "hub_host_ratio": 1.0, "hubs_per_host": 1,
        "hub_rate_per_hour": rate, "start_time": HISTORY_START, "hub_backlog": timedelta(0),
        "hub_horizon": timedelta(days=days), "robots_unavailable_ratio": 0.0,
    }
    values.update(overrides)
    return rhythmic_config(**values)


def hub_history(web: SimWeb) -> list[tuple[str, datetime]]:
    """``(key, appeared at)`` of every hub article of ``web``, in time order."""
    rows = [(section_key(url), at) for hub in web.hub_urls() for url, at in web.hub_articles(hub)]
    return sorted(rows, key=lambda row: (row[1], row[0]))


def write_history(path: Path, rows: Sequence[tuple[str, datetime]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "published_at"])
        for key, at in rows:
            writer.writerow([key, at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m libs.simweb.history_export", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hubs", type=int, default=8)
    parser.add_argument("--days", type=float, default=37.0)
    parser.add_argument("--rate", type=float, default=20.0, help="articles per hour of a hub at its busiest weights")
    parser.add_argument("--bursts-per-week", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    web = build_web(history_config(args.seed, args.hubs, args.days, args.rate,
                                   hub_bursts_per_week=args.bursts_per_week))
    rows = hub_history(web)
    write_history(args.out, rows)
    print(f"{len(rows)} articles of {len(web.hub_urls())} hubs over {args.days:g} days written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
