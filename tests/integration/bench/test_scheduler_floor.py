"""The scheduler's floor does the work it stands for: every answered request applied, within its budget."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from bench.scheduler_floor import Floor
from bench.scheduler_scale import serve_fetcher
from libs.common.db.migrations import apply_migrations
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import ALL_TOPICS
from libs.common.url_keys import normalized_fingerprint
from libs.localinfra import create_topics

URLS, IN_FLIGHT, ANSWERED = 400, 60, 250


def _frontier(dsn: str) -> None:
    apply_migrations(dsn, "scheduler", Path("services/scheduler/migrations"))
    urls = [f"http://h{i % 40}.test/p/{i}" for i in range(URLS)]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO scheduler.frontier (url_fp, url, host, status, priority, cash, depth)"
            " SELECT fp, url, host, 'queued', p, p, 1 FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[])"
            " AS t(fp, url, host, p)",
            ([normalized_fingerprint(u) for u in urls], urls, [u.split("/")[2] for u in urls],
             [(i * 37 % URLS) / URLS for i in range(URLS)]),
        )


@pytest.mark.parametrize("writes", [1, 2])
def test_the_floor_applies_every_answered_request_and_keeps_its_budget(
    fresh_db: str, kafka_bootstrap: str, unique_name: Callable[[str], str], writes: int
) -> None:
    _frontier(fresh_db)
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("floor") + ".")
    create_topics(kafka_bootstrap, [(kafka.topic(t.name), t.partitions) for t in ALL_TOPICS])
    floor = Floor(fresh_db, kafka, URLS, IN_FLIGHT, batch=25, outcome_batch=20, writes=writes)
    runner = threading.Thread(target=floor.run, daemon=True)
    runner.start()
    try:
        fetched = serve_fetcher(kafka_bootstrap, kafka.topic_prefix, ANSWERED, warmup=1, timeout=60.0)
        answered = fetched["received"]  # at least ANSWERED: it answers the whole batch it consumed last
        deadline = time.monotonic() + 30
        while floor.applied < answered and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        floor.stop()
        runner.join(15)

    assert fetched["complete"] and fetched["rate"] > 0
    assert floor.applied == answered  # every outcome the stand-in fetcher sent, each once
    assert answered <= floor.sent <= answered + IN_FLIGHT and 0 < floor.most_out <= IN_FLIGHT
    with psycopg.connect(fresh_db) as conn:
        counts: dict[str, int] = dict(
            conn.execute("SELECT status, count(*) FROM scheduler.frontier GROUP BY status").fetchall())
        outcomes = conn.execute(
            "SELECT DISTINCT http_status, last_outcome FROM scheduler.frontier WHERE status = 'fetched'"
        ).fetchall()
        best = conn.execute(  # handed out best first: nothing queued beats what was marked handed out
            "SELECT max(priority) FILTER (WHERE status = 'queued') <= min(priority) FILTER (WHERE status <> 'queued')"
            " FROM scheduler.frontier"
        ).fetchone()
    assert counts["fetched"] == answered
    assert counts.get("in_flight", 0) == (floor.sent - answered if writes == 2 else 0)
    assert counts["queued"] == URLS - (floor.sent if writes == 2 else answered)
    assert outcomes == [(200, "FETCH_STATUS_OK")]
    if writes == 2:  # with one write, a URL handed out but not answered yet is still queued
        assert best == (True,)
