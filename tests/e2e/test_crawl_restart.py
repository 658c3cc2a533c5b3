"""Stopping the whole stack mid-crawl (broker left running) and starting it again loses nothing."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from libs.common.urls import normalize_url
from tests.conftest import make_unique_name
from tests.e2e.crawl_harness import crawl_stack

pytestmark = pytest.mark.e2e


def test_stack_restart_mid_crawl_finishes_with_every_page_fetched_once(
    kafka_bootstrap: str, fresh_db: str, tmp_path: Path
) -> None:
    prefix = make_unique_name("restart") + "."
    with crawl_stack(kafka_bootstrap, fresh_db, prefix, tmp_path) as (stack, simweb, web):
        expected = {normalize_url(u) for u in web.reachable(web.home_pages())}
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())
            deadline = time.monotonic() + 120
            while admin.stats()["fetched"] < len(expected) // 3:
                assert time.monotonic() < deadline, "the crawl made no progress"
                time.sleep(0.1)
        stack.stop()
        stopped_at = len(simweb.request_log)
        fetched_before = stack.query("SELECT count(*) FROM scheduler.frontier WHERE status = 'fetched'")[0][0]
        assert 0 < fetched_before < len(expected), "stopped in the middle of the crawl"

        stack.start()
        stack.wait_until_done()
        log = simweb.request_log
        assert len(log) > stopped_at
        requested = Counter(r.url for r in log if r.path != "/robots.txt")
        assert set(requested) == expected
        assert [u for u, n in requested.items() if n > 1] == []
        fetched = {r[0] for r in stack.query("SELECT url FROM scheduler.frontier WHERE status = 'fetched'")}
        assert fetched == expected
        announced_twice = stack.query(
            "SELECT url, count(*) FROM linkbase.urls GROUP BY url HAVING count(*) > 1"
        )
        assert announced_twice == []
