"""Frontier gauges sampled from the real database, and the log line that names a stuck host."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from libs.common.db.pool import Database
from services.scheduler.frontier.metrics import FrontierMetrics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ROWS = [
    (1, "http://a.test/1", "a.test", "queued", None),
    (2, "http://a.test/2", "a.test", "queued", None),
    (3, "http://b.test/", "b.test", "in_flight", 100),
    (4, "http://c.test/", "c.test", "in_flight", 5),
    (5, "http://c.test/x", "c.test", "fetched", None),
]


def gauge(name: str, labels: dict[str, str] | None = None) -> float | None:
    return REGISTRY.get_sample_value(name, labels or {})


async def test_gauges_follow_the_frontier_and_the_oldest_request_is_named(
    scheduler_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    async with scheduler_db.transaction() as conn:
        for fp, url, host, status, age in ROWS:
            await conn.execute(
                "INSERT INTO scheduler.frontier (url_fp, url, host, status, dispatched_at)"
                " VALUES (%s, %s, %s, %s, now() - make_interval(secs => %s))",
                (fp, url, host, status, age or 0),
            )
    sampler = FrontierMetrics(scheduler_db, lease_seconds=120.0)
    with caplog.at_level(logging.WARNING, logger="services.scheduler.frontier.metrics"):
        await sampler.sample()
    assert gauge("trawl_frontier_urls", {"status": "queued"}) == 2
    assert gauge("trawl_frontier_urls", {"status": "in_flight"}) == 2
    assert gauge("trawl_frontier_urls", {"status": "fetched"}) == 1
    assert gauge("trawl_frontier_hosts_in_flight") == 2
    oldest = gauge("trawl_frontier_oldest_in_flight_seconds")
    assert oldest is not None and oldest >= 100
    (stuck,) = [r for r in caplog.records if "waited" in r.getMessage()]
    assert (getattr(stuck, "url", None), getattr(stuck, "host", None)) == ("http://b.test/", "b.test")

    async with scheduler_db.transaction() as conn:
        await conn.execute("UPDATE scheduler.frontier SET status = 'fetched' WHERE status <> 'fetched'")
    caplog.clear()
    await sampler.sample()
    assert gauge("trawl_frontier_urls", {"status": "queued"}) == 0  # a status that emptied reads 0, not stale
    assert gauge("trawl_frontier_hosts_in_flight") == 0
    assert not [r for r in caplog.records if "waited" in r.getMessage()]
