"""The end-to-end timeline's figures, from request logs and CPU samples made up here (nothing crawled)."""

from __future__ import annotations

import pytest

from bench import e2e_timeline
from bench.e2e_vs_scrapy import build_workload
from libs.simweb.request_log import RequestRecord


def _record(host: str, path: str, start: float, end: float, status: int = 200) -> RequestRecord:
    return RequestRecord(start, end, start, host, path, status, "ua")


def test_depths_walk_the_web_as_its_reachable_set_does() -> None:
    work = build_workload(seed=3, hosts=4, pages=24)

    depth = e2e_timeline.depths(work.web)

    assert set(depth) == set(work.reachable)
    assert {url for url, d in depth.items() if d == 0} == set(work.web.home_pages()) & set(work.reachable)
    assert max(depth.values()) >= 1
    for url, d in depth.items():  # a page one deeper than its shallowest referrer among the crawled pages
        if d > 0:
            assert any(d == depth[src] + 1 for src in depth
                       if not work.web.pages[src].nofollow
                       and url in {link.target_url for link in work.web.links_at(src) if link.kind != "bad"})


def test_depth_spans_time_each_depth_from_the_first_request() -> None:
    log = [_record("a.test", "/robots.txt", 100.0, 100.1)] + [
        _record("a.test", f"/p{i}", 100.0 + i, 100.5 + i) for i in range(10)]
    depth = {f"http://a.test/p{i}": (0 if i < 2 else 1) for i in range(9)}  # /p9 unknown: depth -1

    spans = {s.depth: s for s in e2e_timeline.depth_spans(log, depth)}

    assert spans[0] == e2e_timeline.DepthSpan(0, 2, 0.5, 1.5, 1.5, 1.5)
    assert (spans[1].pages, spans[1].first, spans[1].last) == (7, 2.5, 8.5)
    assert spans[-1].pages == 1


def test_host_spans_rank_hosts_by_pages_and_count_idle_gaps() -> None:
    log = [
        _record("big.test", "/", 10.0, 10.1), _record("big.test", "/a", 10.3, 10.4),  # gap 0.2
        _record("big.test", "/b", 11.4, 11.5),  # gap 1.0: idle
        _record("small.test", "/", 10.0, 10.2),
        _record("big.test", "/c", 11.7, 11.8, status=404),  # not a page
    ]

    spans = e2e_timeline.host_spans(log, top=1)

    assert spans == [e2e_timeline.HostSpan("big.test", 3, 0.0, 1.5, 0.6, 1.0)]


def test_timeline_finds_where_the_machine_stops_being_saturated() -> None:
    log = [_record("a.test", f"/p{i}", 0.0 + i * 0.25, 0.2 + i * 0.25) for i in range(12)]  # ends 0.2 .. 2.95
    samples = [(0.25, 0.99), (0.75, 0.95), (1.25, 0.97), (1.75, 0.5), (2.25, 0.3), (2.75, 0.2), (9.0, 1.0)]

    t = e2e_timeline.timeline(log, samples)

    assert t["seconds"] == pytest.approx(2.95)
    assert t["pages"] == 12
    assert t["pages_per_second"] == [4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert t["busy"] == [0.99, 0.95, 0.97, 0.5, 0.3, 0.2]
    assert t["saturated_until"] == 1.5
    assert t["seconds_to"] == {"50%": pytest.approx(1.45), "90%": pytest.approx(2.7), "99%": pytest.approx(2.95)}
    assert t["mean_busy"] == pytest.approx((0.99 + 0.95 + 0.97 + 0.5 + 0.3 + 0.2) / 6, abs=1e-3)
