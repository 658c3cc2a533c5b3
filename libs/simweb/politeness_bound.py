"""How fast a polite crawl can be, and how polite a crawl was, from the web and its request log.

Politeness makes each host a queue: one request at a time, and before every request after
the first a gap of the host's delay (the larger of the crawler's minimum delay and the
host's robots.txt ``Crawl-delay``). A host that must serve ``n`` pages therefore takes at
least its robots.txt request and ``n`` page requests one after the other: ``n`` gaps and
``n + 1`` response latencies. Its deepest page needs the pages above it first (a chain of
``depth + 1`` page requests after robots.txt), which a tree's page count always covers, but
the bound takes both. A crawl of every host at once can end no sooner than its slowest host:
that is the politeness bound, on the same clock as :func:`crawl_seconds` (first request to
last response, as the server logs them).

:func:`gap_violations` counts, request by request, what :mod:`libs.simweb.log_checks`
measures as per-host minima: requests that overlapped another to the same host, and gaps
shorter than the host's delay, end-to-start (the fetcher's contract) and start-to-start (a
request rate's, such as Scrapy's ``DOWNLOAD_DELAY``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from libs.simweb.request_log import RequestRecord
from libs.simweb.web import SimWeb

TOLERANCE = 0.001
"""Seconds a logged end-to-start gap may fall short of a delay before it counts (the float stamps' noise).
The server stamps a request's start after the client sent it and a response's end before the client has
it, so the gap it logs is never longer than the one the client kept."""
START_TOLERANCE = 0.05
"""Share of a delay a logged start-to-start gap may fall short of it before it counts: a client spaces the
moments it sends, the server stamps when each request arrives, and the two differ by each request's way
through the client's and the server's event loops (tens of milliseconds on a busy machine)."""


@dataclass(frozen=True)
class HostBound:
    """The least time one host keeps a polite crawler busy."""

    host: str
    pages: int
    gap: float
    latency: float
    depth: int = 0

    @property
    def seconds(self) -> float:
        requests = self.pages + 1  # robots.txt first
        queue = (requests - 1) * self.gap + requests * self.latency
        chain = (self.depth + 1) * self.gap + (self.depth + 2) * self.latency if self.pages else self.latency
        return max(queue, chain)


def host_gaps(web: SimWeb, min_delay: float, user_agent: str = "trawl") -> dict[str, float]:
    """Each host's delay: the larger of ``min_delay`` and its robots.txt Crawl-delay."""
    return {host: max(min_delay, web.crawl_delay(host, user_agent) or 0.0) for host in web.hosts}


def host_bounds(web: SimWeb, pages: Iterable[str], min_delay: float, depth: Mapping[str, int] | None = None,
                user_agent: str = "trawl") -> dict[str, HostBound]:
    """The bound of every host of ``web`` when ``pages`` (URLs) are the pages to fetch; ``depth``: level of
    each page (0 for a home page), when known."""
    counts: dict[str, int] = defaultdict(int)
    deepest: dict[str, int] = defaultdict(int)
    for url in pages:
        host = web.pages[url].host
        counts[host] += 1
        deepest[host] = max(deepest[host], (depth or {}).get(url, 0))
    gaps = host_gaps(web, min_delay, user_agent)
    return {host: HostBound(host, counts[host], gaps[host], spec.latency, deepest[host])
            for host, spec in web.hosts.items()}


def politeness_bound(bounds: Iterable[HostBound]) -> HostBound:
    """The host whose bound is the crawl's: the slowest."""
    return max(bounds, key=lambda b: (b.seconds, b.host))


def crawl_seconds(log: Iterable[RequestRecord]) -> float:
    """From the first request's start to the last response's end, as the server logged them."""
    records = list(log)
    if not records:
        return 0.0
    return max(r.finished_at for r in records) - min(r.started_at for r in records)


def seconds_to_share(log: Iterable[RequestRecord], shares: Sequence[float]) -> dict[float, float]:
    """Seconds from the first request's start until each share of the pages was answered (200, robots.txt
    aside), as the server logged them: how fast a crawl went before its slowest host alone was left."""
    records = list(log)
    if not records:
        return {}
    start = min(r.started_at for r in records)
    ends = sorted(r.finished_at - start for r in records if r.is_page)
    if not ends:
        return {}
    return {share: ends[max(0, math.ceil(share * len(ends)) - 1)] for share in shares}


@dataclass(frozen=True)
class GapViolations:
    """Requests that broke a host's politeness, each counted once per rule it broke."""

    overlaps: int
    """Started while an earlier request to the host was still being answered."""
    end_to_start: int
    """Started less than the host's delay after the end of the host's previous response."""
    start_to_start: int
    """Started less than the host's delay (less ``START_TOLERANCE``) after the start of the host's previous one."""


def gap_violations(log: Iterable[RequestRecord], gaps: Mapping[str, float], default_gap: float = 0.0,
                   tolerance: float = TOLERANCE, start_tolerance: float = START_TOLERANCE) -> GapViolations:
    """Counts over every host's requests in start order; a host missing from ``gaps`` has ``default_gap``."""
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in log:
        by_host[record.host].append(record)
    overlaps = short_end = short_start = 0
    for host, records in by_host.items():
        records.sort(key=lambda r: (r.started_at, r.finished_at))
        gap = gaps.get(host, default_gap)
        latest_finish, previous_start = records[0].finished_at, records[0].started_at
        for record in records[1:]:
            overlaps += record.started_at < latest_finish
            short_end += record.started_at - latest_finish < gap - tolerance
            short_start += record.started_at - previous_start < gap * (1 - start_tolerance)
            latest_finish = max(latest_finish, record.finished_at)
            previous_start = record.started_at
    return GapViolations(overlaps, short_end, short_start)
