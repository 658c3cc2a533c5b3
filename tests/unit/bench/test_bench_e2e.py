"""The end-to-end benchmarks still import and build their workloads (tiny sizes, nothing timed)."""

from __future__ import annotations

import os
import socket

import pytest

from bench import crawl_costs, e2e_vs_scrapy, proc_usage, scrapy_spider, trawl_stack_run
from libs.simweb.request_log import RequestRecord


def _record(host: str, path: str, start: float, end: float, status: int = 200) -> RequestRecord:
    return RequestRecord(start, end, start, host, path, status, "ua")


def test_workload_is_every_reachable_page_with_its_html() -> None:
    work = e2e_vs_scrapy.build_workload(seed=3, hosts=4, pages=24)

    assert len(work.hosts) == 4
    assert [url for url, _ in work.html] == work.reachable
    assert all(html.lstrip().lower().startswith("<!doctype html") for _, html in work.html)
    assert work.web.crawl_delay(work.hosts[0]) is None  # no Crawl-delay: Scrapy would not honour it


def test_log_figures_count_pages_and_judge_politeness() -> None:
    work = e2e_vs_scrapy.build_workload(seed=3, hosts=4, pages=24)
    host = work.hosts[0]
    log = [
        _record(host, "/robots.txt", 10.0, 10.1),
        _record(host, "/", 10.4, 10.5),
        _record(host, "/missing", 10.6, 10.7, status=404),
        _record(host, "/other", 10.65, 11.0),  # overlaps the one before it
    ]

    figures = e2e_vs_scrapy.log_figures(log, work.web)

    assert (figures.pages, figures.requests) == (2, 4)
    assert figures.seconds == pytest.approx(1.0)
    assert figures.max_in_flight_per_host == 2
    assert figures.min_gap < 0
    assert e2e_vs_scrapy.log_figures([], work.web).rate == 0.0


def test_spider_is_set_up_as_politely_as_trawl() -> None:
    settings = scrapy_spider.scrapy_settings(min_delay=0.2, concurrency=100)
    assert settings["ROBOTSTXT_OBEY"] and settings["CONCURRENT_REQUESTS_PER_DOMAIN"] == 1
    assert settings["DOWNLOAD_DELAY"] == 0.2 and not settings["AUTOTHROTTLE_ENABLED"]
    spider = scrapy_spider.make_spider_class()(hosts=["a.test", "b.test"])
    assert spider.hosts == {"a.test", "b.test"}


def test_sampler_reads_this_process() -> None:
    sampler = proc_usage.Sampler({"me": (os.getpid(), False)}, interval=60)
    sampler.start()
    sum(i * i for i in range(200_000))
    usage = sampler.stop()["me"]
    assert usage.cpu_seconds > 0 and usage.peak_mib > 1
    assert os.getpid() not in proc_usage.children_of(os.getpid())


def test_stack_env_ports_are_free_and_below_the_ephemeral_range(tmp_path: os.PathLike[str]) -> None:
    env = trawl_stack_run.stack_env(tmp_path)  # type: ignore[arg-type]
    ports = [int(env[k]) for k in ("TRAWL_LOCAL_BROKER_PORT", "TRAWL_LOCAL_POSTGRES_PORT",
                                   "TRAWL_LOCAL_GRPC_BASE_PORT")]
    assert all(20000 <= p < 32768 for p in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[0]))
    assert env["TRAWL_LOCAL_METRICS_BASE_PORT"] == "0"


def test_cost_table_prints_medians(capsys: pytest.CaptureFixture[str]) -> None:
    def run(scale: float) -> dict[str, object]:
        return {"pages": 100, "seconds": 10.0 * scale, "rate": 10.0 / scale,
                "cpu_seconds": dict.fromkeys(crawl_costs.PARTS, scale),
                "peak_mib": dict.fromkeys(crawl_costs.PARTS, 50.0)}

    size = crawl_costs.median_run([run(1.0), run(3.0), run(2.0)])
    assert size["seconds"] == 20.0 and size["cpu_seconds"]["extractor"] == 2.0
    crawl_costs.print_table({"sizes": [size], "pages_per_host": 10, "repeat": 3, "machine": {
        "cpus": 2, "python": "3.11", "load_average_1m_at_end": 1.0}})
    assert "extractor" in capsys.readouterr().out


def test_cpu_figures_cap_the_rate_by_two_cores_and_by_the_busiest_process() -> None:
    one = e2e_vs_scrapy.cpu_figures([{"scrapy-0": 10.0, "simweb": 1.0}])
    assert (one["cpu_ms_per_page"], one["two_idle_cores_pages_per_second"]) == (10.0, 100.0)
    many = e2e_vs_scrapy.cpu_figures([{"extractor": 4.0, "scheduler": 2.0, "broker": 6.0, "simweb": 1.0}])
    assert many["busiest_process_ms_per_page"] == 4.0  # the broker is threaded, not one core's worth
    assert many["two_idle_cores_pages_per_second"] == pytest.approx(2000 / 12.0, abs=0.05)
