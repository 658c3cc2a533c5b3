"""Lateness of a host's next request after its gap, judged from a request log."""

from __future__ import annotations

import pytest

from libs.simweb.gap_lateness import gap_lateness
from libs.simweb.request_log import RequestRecord

LINKS = {
    "http://a.test/": ["http://a.test/1", "http://a.test/2", "http://a.test/3"],
    "http://a.test/1": ["http://a.test/4"],
}


def _request(host: str, path: str, start: float, end: float, status: int = 200) -> RequestRecord:
    return RequestRecord(start, end, start, host, path, status, "trawl")


def _links_of(url: str) -> list[str]:
    return LINKS.get(url, [])


def test_starts_after_a_ready_url_are_judged_against_the_gaps_end() -> None:
    log = [
        _request("a.test", "/robots.txt", 0.0, 0.1),
        _request("a.test", "/", 1.1, 1.2),  # the first request after robots.txt: not judged
        _request("a.test", "/1", 3.2, 3.3),  # ready at 1.2, gap ended 2.2: 1.0 s late
        _request("a.test", "/2", 4.31, 4.4),  # gap ended 4.3: 10 ms late
        _request("a.test", "/3", 5.4, 5.5),  # on the dot
        _request("a.test", "/4", 6.5, 6.6),  # linked from /1 (answered 3.3): ready long before 6.5
    ]
    late = gap_lateness(log, _links_of, {"a.test": 1.0}, default_gap=0.5)
    assert late is not None
    assert late.judged == 4
    assert late.worst == pytest.approx(1.0)
    assert late.median == pytest.approx(0.0, abs=0.011)
    assert late.on_time == pytest.approx(0.75)


def test_urls_not_yet_known_long_enough_are_not_judged() -> None:
    log = [
        _request("a.test", "/", 0.0, 0.1),
        _request("a.test", "/1", 2.0, 2.1),  # known at 0.1, the gap ended 1.1: known only 1.0 s: judged (0.9 late)
        _request("a.test", "/4", 5.0, 5.1),  # known at 2.1, the gap ended 3.1: judged, 1.9 s late
        _request("b.test", "/x", 0.0, 0.1),
        _request("b.test", "/y", 9.0, 9.1),  # never linked: not judged
    ]
    late = gap_lateness(log, _links_of, {}, default_gap=1.0, known_after=1.0)
    assert late is not None and late.judged == 2
    assert late.median == pytest.approx(1.9)
    assert late.worst == pytest.approx(1.9)
    stricter = gap_lateness(log, _links_of, {}, default_gap=1.0, known_after=1.5)
    assert stricter is None
