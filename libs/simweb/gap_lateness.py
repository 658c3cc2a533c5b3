"""How late a crawler starts a host's next request once the host's gap has passed, from the request log.

A polite crawler waits out each host's gap (the end of one response to the start of the next); a
fast one starts the next request as the gap ends, whenever the host has a URL ready. From the
server's log alone, a URL counts as ready when a page linking to it was answered at least
``known_after`` seconds before the gap ended (the crawler had its links that long: enough for a
crawler that extracts in another process, and more than enough for one that parses in its own).
For every two consecutive requests to a host whose second URL was ready so, the lateness is the
second request's start less the gap's end (end of the first response plus the host's delay).
Requests whose URL was not yet ready, and robots.txt requests, are not judged: waiting for a URL to
be discovered is the crawl's shape, not lateness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from libs.simweb.log_checks import by_host
from libs.simweb.request_log import RequestRecord

ON_TIME = 0.05
"""Seconds after the gap's end within which a start counts as on time."""
KNOWN_AFTER = 1.0


@dataclass(frozen=True)
class Lateness:
    """Lateness of the judged starts, in seconds (negative: started before the gap ended)."""

    judged: int
    median: float
    p90: float
    p99: float
    worst: float
    on_time: float
    """Share of judged starts within ``ON_TIME`` of the gap's end."""

    def figures(self) -> dict[str, float]:
        return {"judged": self.judged, "median_s": round(self.median, 3), "p90_s": round(self.p90, 3),
                "p99_s": round(self.p99, 3), "worst_s": round(self.worst, 3), "on_time": round(self.on_time, 3)}


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def gap_lateness(log: Iterable[RequestRecord], links_of: Callable[[str], Iterable[str]], gaps: Mapping[str, float],
                 default_gap: float, known_after: float = KNOWN_AFTER) -> Lateness | None:
    """The lateness of every judged start (see the module); ``links_of(url)``: the URLs a page links to,
    normalised as the log's ``http://host/path`` URLs are; None when no start could be judged."""
    pages = [record for record in log if record.path != "/robots.txt"]
    known: dict[str, float] = {}
    for record in pages:
        if record.status == 200:
            for target in links_of(record.url):
                known[target] = min(known.get(target, record.finished_at), record.finished_at)
    late: list[float] = []
    for host, requests in by_host(pages).items():
        gap = gaps.get(host, default_gap)
        for before, after in pairwise(requests):
            gap_end = before.finished_at + gap
            ready_at = known.get(after.url)
            if ready_at is not None and ready_at + known_after <= gap_end:
                late.append(after.started_at - gap_end)
    if not late:
        return None
    late.sort()
    return Lateness(len(late), _quantile(late, 0.5), _quantile(late, 0.9), _quantile(late, 0.99), late[-1],
                    sum(1 for x in late if x <= ON_TIME) / len(late))
