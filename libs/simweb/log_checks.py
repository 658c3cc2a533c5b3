"""Checks of a crawler's behaviour, read from the simulated web's request log.

The fetcher's politeness contract is per host: at most one request in flight,
and at least the host's delay between the *end* of one response and the *start*
of the next request. :func:`min_gap_per_host` measures exactly that gap;
:func:`min_start_gap_per_host` measures start-to-start spacing, for crawlers
whose contract is a request rate instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise

from libs.simweb.request_log import RequestRecord
from libs.simweb.web import SimWeb


def by_host(log: Iterable[RequestRecord]) -> dict[str, list[RequestRecord]]:
    """Each host's requests, by start."""
    groups: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in log:
        groups[record.host].append(record)
    for records in groups.values():
        records.sort(key=lambda r: (r.started_at, r.finished_at))
    return dict(groups)


def requests_per_host(log: Iterable[RequestRecord]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for record in log:
        counts[record.host] += 1
    return dict(counts)


def max_concurrency_per_host(log: Iterable[RequestRecord]) -> dict[str, int]:
    """Most requests in flight at once per host, from overlapping ``[started_at, finished_at]`` intervals.

    Intervals that only touch (one ends exactly when the next starts) do not overlap.
    """
    result: dict[str, int] = {}
    for host, records in by_host(log).items():
        events = sorted([(r.started_at, 1) for r in records] + [(r.finished_at, -1) for r in records])
        in_flight = peak = 0
        for _, step in events:  # at equal times -1 sorts before +1: touching is not overlapping
            in_flight += step
            peak = max(peak, in_flight)
        result[host] = peak
    return result


def min_gap_per_host(log: Iterable[RequestRecord]) -> dict[str, float]:
    """Smallest end-to-start gap per host: for each request after the first, its start minus the
    latest finish among the host's earlier-started requests. Negative when requests overlapped.
    Hosts with a single request are absent.
    """
    result: dict[str, float] = {}
    for host, records in by_host(log).items():
        latest_finish = records[0].finished_at
        gaps = []
        for record in records[1:]:
            gaps.append(record.started_at - latest_finish)
            latest_finish = max(latest_finish, record.finished_at)
        if gaps:
            result[host] = min(gaps)
    return result


def min_start_gap_per_host(log: Iterable[RequestRecord]) -> dict[str, float]:
    """Smallest time between the starts of consecutive requests per host (hosts with one request absent)."""
    result: dict[str, float] = {}
    for host, records in by_host(log).items():
        gaps = [b.started_at - a.started_at for a, b in pairwise(records)]
        if gaps:
            result[host] = min(gaps)
    return result


def robots_violations(
    log: Iterable[RequestRecord], web: SimWeb, user_agent: str = "trawl"
) -> list[RequestRecord]:
    """Requests for URLs that robots.txt forbids to ``user_agent`` (``/robots.txt`` itself excluded).

    Every record is judged as if made by ``user_agent``; pass a log of one crawler.
    Requests to a host whose robots.txt answers 503 are all violations.
    """
    return [
        record
        for record in log
        if not record.is_robots
        and not web.allowed(record.url, user_agent)
    ]
