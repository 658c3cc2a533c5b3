"""The benchmarks still import and build their workloads (tiny sizes, nothing timed), so they cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import crawl, extraction, frontier_dispatch, harness, linkbase_writes
from cli.demo import demo_web_config
from libs.common.topics import PAGE_LINKS
from libs.simweb import build_web
from services.extractor.settings import ExtractorSettings
from services.linkbase.batch import build_batch
from services.scheduler.frontier.store import Dispatched


def test_linkbase_workload_builds_batches_with_half_new_links() -> None:
    batches = linkbase_writes.build_workload(rounds=2, pages_per_batch=3, links_per_page=4)

    assert [len(records) for records in batches] == [3, 3]
    assert linkbase_writes.count_links(batches) == 2 * 3 * 4
    assert all(record.topic == PAGE_LINKS for records in batches for record in records)
    first = batches[0][0].value
    assert [link.url for link in first.links][:2] == ["http://h0.test/nav/0", "http://h0.test/nav/1"]
    for records in batches:
        batch = build_batch(records)
        assert len(batch.page_rows) == 3
        assert len(batch.links) == 3 * 4


def test_extraction_workload_runs_through_both_contenders() -> None:
    workload = extraction.build_workload(seed=3, hosts=4, pages=20, limit=3)

    assert len(workload.results) == len(workload.html) == 3
    assert all(r.body_codec in ("identity", "zlib") for r in workload.results)
    with_text, links = extraction.extract_all(workload, ExtractorSettings())
    base_text, base_links = extraction.baseline_all(workload)
    assert 0 <= with_text <= 3 and 0 <= base_text <= 3
    assert links > 0 and base_links > 0


def test_frontier_workload_spreads_urls_over_hosts() -> None:
    new, priorities = frontier_dispatch.build_workload(urls=50, hosts=5)

    assert len({u.url_fp for u in new}) == 50
    assert {u.host for u in new} == {f"h{i:05d}.test" for i in range(5)}
    assert [p.url_fp for p in priorities] == [u.url_fp for u in new]
    assert all(0.0 <= p.priority < 1.0 for p in priorities)
    sent = Dispatched(new[0].url_fp, new[0].url, new[0].host, 0.5, 1, 1, "rid")
    (outcome,) = frontier_dispatch.outcomes_for([sent])
    assert (outcome.status, outcome.request_id, outcome.host_next_allowed_at) == ("fetched", "rid", None)


def test_crawl_ceiling_and_summary() -> None:
    web = build_web(demo_web_config(seed=7, hosts=3, pages=30))
    ceiling = crawl.politeness_ceiling(web, min_delay=0.2)

    assert ceiling.seconds >= 0.2 * ceiling.slowest_host_pages > 0
    assert ceiling.slowest_host in web.hosts
    report = {
        "crawl_seconds": ceiling.seconds * 2 + crawl.SETTLE_SECONDS,
        "pages_fetched": ceiling.reachable_pages,
        "pages_reachable_and_allowed": ceiling.reachable_pages,
        "missed": 0,
        "politeness": {"ok": True},
        "fetch_order_vs_pagerank_spearman": 0.5,
        "total_seconds": 99.0,
    }
    summary = crawl.summarise(report, ceiling, {"pages": 30, "hosts": 3, "seed": 7})
    assert summary["time_over_ceiling"] == pytest.approx(2.0, abs=0.05)
    crawl.print_summary(summary)


def test_crawl_stack_env_uses_its_own_home_and_ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAWL_DATABASE_URL", "postgresql://elsewhere/db")
    env = crawl.stack_env(tmp_path)

    assert env["TRAWL_HOME"] == str(tmp_path)
    assert "TRAWL_DATABASE_URL" not in env
    assert env["TRAWL_LOCAL_METRICS_BASE_PORT"] == "0"


async def test_harness_alternates_order_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []

    async def a() -> float:
        calls.append("a")
        return 2.0

    async def b() -> float:
        calls.append("b")
        return 1.0

    first, second = await harness.interleaved(a, b, 3, ("a", "b"), progress=False)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    result = harness.Comparison("demo", "things/s", first, second, {"size": 1})
    assert result.ratio == 2.0
    harness.report(result, as_json=False)
    assert "ratio (median / baseline median): 2.00x" in capsys.readouterr().out
