"""Politeness and robots checks over request logs, on hand-made logs with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from libs.simweb import RequestRecord, SimWeb, SimWebConfig, build_web, read_log_file
from libs.simweb.log_checks import (
    max_concurrency_per_host,
    min_gap_per_host,
    min_start_gap_per_host,
    requests_per_host,
    robots_violations,
)
from libs.simweb.request_log import RequestLog


def rec(host: str, start: float, end: float, path: str = "/", status: int = 200) -> RequestRecord:
    return RequestRecord(started_at=start, finished_at=end, wall_time=1_700_000_000 + start, host=host,
                         path=path, status=status, user_agent="trawl/0.1")


def test_concurrency_counts_overlaps_per_host() -> None:
    log = [
        rec("a.test", 0.0, 1.0), rec("a.test", 0.5, 1.5), rec("a.test", 0.7, 0.8),  # three at 0.75
        rec("b.test", 0.0, 1.0), rec("b.test", 1.0, 2.0),  # touching is not overlapping
        rec("c.test", 5.0, 6.0),
    ]
    assert max_concurrency_per_host(log) == {"a.test": 3, "b.test": 1, "c.test": 1}
    assert requests_per_host(log) == {"a.test": 3, "b.test": 2, "c.test": 1}


def test_gap_is_from_the_end_of_one_response_to_the_next_start() -> None:
    log = [
        rec("a.test", 0.0, 1.0), rec("a.test", 1.5, 2.0), rec("a.test", 3.0, 3.1),  # gaps 0.5, 1.0
        rec("b.test", 0.0, 4.0), rec("b.test", 1.0, 1.5), rec("b.test", 4.2, 5.0),  # overlap: -3.0, then 0.2
        rec("c.test", 0.0, 1.0),
    ]
    gaps = min_gap_per_host(reversed(log))  # order of the log does not matter
    assert gaps == pytest.approx({"a.test": 0.5, "b.test": -3.0})
    starts = min_start_gap_per_host(log)
    assert starts == pytest.approx({"a.test": 1.5, "b.test": 1.0})


def test_polite_log_has_positive_gaps_only() -> None:
    polite = [rec("a.test", 0.0, 3.0), rec("a.test", 3.5, 4.0), rec("a.test", 5.0, 5.2), rec("b.test", 0.0, 9.0)]
    assert min_gap_per_host(polite) == pytest.approx({"a.test": 0.5})
    assert max_concurrency_per_host(polite) == {"a.test": 1, "b.test": 1}


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SimWebConfig(seed=3, hosts=40, pages=600))


def test_robots_violations_are_found(web: SimWeb) -> None:
    private = next(h for h, s in web.hosts.items() if s.robots == "disallow_private")
    closed = next(h for h, s in web.hosts.items() if s.robots == "unavailable")
    open_host = next(h for h, s in web.hosts.items() if s.robots == "allow_all")
    bad = [
        rec(private, 1, 2, "/private/page-3.html"),
        rec(closed, 3, 4, "/"),
        rec(private, 5, 6, "/private/x?y=1"),
    ]
    fine = [
        rec(private, 0, 1, "/robots.txt"), rec(closed, 0, 1, "/robots.txt", 503),
        rec(private, 2, 3, "/section-1/page-2.html"), rec(open_host, 0, 1, "/private/anything"),
    ]
    assert robots_violations(fine + bad, web) == bad
    assert robots_violations(fine, web) == []
    assert robots_violations([rec(open_host, 0, 1, "/")], web, user_agent="badbot") != []


def test_log_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "requests.jsonl"
    log = RequestLog(path)
    log.open()
    records = [rec("a.test", 0.25, 0.5, "/x?q=1", 404), rec("b.test", 1.0, 2.0)]
    for record in records:
        log.append(record)
    assert read_log_file(path) == records  # flushed: readable while still open
    log.close()
    with path.open("a") as handle:
        handle.write('{"started_at": 1.0, "torn')
    assert read_log_file(path) == records
    log.clear()
    assert log.records() == []
