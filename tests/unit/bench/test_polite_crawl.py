"""The politeness benchmark judges a crawl from the web's log (tiny web, hand-made logs, nothing crawled)."""

from __future__ import annotations

import pytest

from bench import polite_crawl
from libs.simweb.request_log import RequestRecord
from libs.simweb.site_tree import SiteGroup, TreeWebConfig


@pytest.fixture(scope="module")
def case() -> polite_crawl.Case:
    config = TreeWebConfig("t", (SiteGroup("s", 4, (6, 6), 1),), seed=9, crawl_delay_share=0.25,
                           crawl_delay_values=(2.0,), disallow_share=0.25, latency_range=(0.0, 0.0))
    return polite_crawl.build_case("t", config, 0.5)


def _perfect_log(case: polite_crawl.Case) -> list[RequestRecord]:
    """Each host's robots.txt, then its pages breadth first, a gap of the host's delay before each."""
    log = []
    gaps = {host: bound.gap for host, bound in case.bounds.items()}
    for host in case.web.hosts:
        t = 0.0
        log.append(RequestRecord(t, t + 0.01, t, host, "/robots.txt", 200, "trawl"))
        for url in sorted((u for u in case.reachable if case.web.pages[u].host == host),
                          key=lambda u: (case.web.levels[u], u)):
            t += 0.01 + gaps[host]
            log.append(RequestRecord(t, t + 0.01, t, host, case.web.pages[url].path, 200, "trawl"))
    return log


def test_a_perfect_crawl_meets_the_bound_and_breaks_nothing(case: polite_crawl.Case) -> None:
    figures = polite_crawl.judge(case, "trawl", _perfect_log(case))
    assert figures.pages == len(case.reachable) == 18  # one host of four says Disallow: /
    assert figures.seconds == pytest.approx(6 * 2.0 + 7 * 0.01, abs=0.01)  # the Crawl-delay host
    assert case.bound.seconds == pytest.approx(12.0)  # no latency in this web
    assert figures.violations == 0 and figures.short_gaps_start_to_start == 0
    assert set(figures.pagerank_captured) == {"10%", "20%", "30%", "50%"}
    assert set(figures.seconds_to) == {"50%", "90%"}
    assert 0 < figures.seconds_to["50%"] <= figures.seconds_to["90%"] <= figures.seconds


def test_crawl_delay_kept_only_as_the_web_delay_is_counted(case: polite_crawl.Case) -> None:
    delayed = next(h for h, b in case.bounds.items() if b.gap == 2.0)
    log = [r for r in _perfect_log(case) if r.host != delayed]
    log += [RequestRecord(i * 0.6, i * 0.6 + 0.01, 0.0, delayed, "/robots.txt" if i == 0 else f"/{i}", 200, "x")
            for i in range(3)]
    figures = polite_crawl.judge(case, "scrapy", log)
    assert (figures.short_gaps_end_to_start, figures.short_gaps_start_to_start) == (2, 2)
    assert polite_crawl.scrapy_slots(case) == {delayed: {"delay": 2.0}}


def test_verdicts_compare_trawl_with_scrapy_and_the_larger_bound(case: polite_crawl.Case) -> None:
    web = polite_crawl.web_summary(case, cpu_bound=20.0)
    trawl = polite_crawl.judge(case, "trawl", _perfect_log(case))
    scrapy = polite_crawl.judge(case, "scrapy", _perfect_log(case))
    scrapy.seconds = trawl.seconds * 2
    v = polite_crawl.verdicts(web, trawl, scrapy)
    assert v["trawl_vs_scrapy"] == {"ratio": 0.5, "target": 0.67, "met": True}
    assert v["trawl_vs_bound"]["ratio"] == pytest.approx(trawl.seconds / 20.0, abs=0.01)  # the CPU bound is larger
    assert v["pagerank_at_10"]["met"] and v["trawl_violations"]["met"]


def test_a_perfect_crawl_starts_each_next_request_as_the_gap_ends(case: polite_crawl.Case) -> None:
    figures = polite_crawl.judge(case, "trawl", _perfect_log(case))
    assert figures.lateness is not None and figures.lateness["judged"] > 0
    assert figures.lateness["p99_s"] == pytest.approx(0.0, abs=1e-9)
    web = polite_crawl.web_summary(case, cpu_bound=None)
    assert polite_crawl.verdicts(web, figures, None)["trawl_lateness"]["met"]


def test_a_crawl_that_waits_past_the_gaps_misses_the_lateness_target(case: polite_crawl.Case) -> None:
    late = [RequestRecord(r.started_at * 1.5, r.finished_at * 1.5, r.wall_time, r.host, r.path, r.status,
                          r.user_agent) for r in _perfect_log(case)]  # every gap half as long again
    figures = polite_crawl.judge(case, "trawl", late)
    assert figures.lateness is not None and figures.lateness["median_s"] > 0.2
    web = polite_crawl.web_summary(case, cpu_bound=None)
    assert not polite_crawl.verdicts(web, figures, None)["trawl_lateness"]["met"]
