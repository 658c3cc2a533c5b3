"""The crawl summary reads what the services publish (their read views) on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import psycopg

from cli.crawl_report import crawl_report
from cli.demo import demo_web_config
from libs.common.db.migrations import apply_migrations
from libs.common.url_keys import normalized_fingerprint
from libs.common.urls import normalize_url
from libs.simweb import build_web

SERVICES = Path(__file__).resolve().parents[3] / "services"


def test_the_summary_counts_fetched_missed_and_blocked_pages_from_the_read_views(pg_dsn: str) -> None:
    for schema in ("scheduler", "linkbase", "importance"):
        apply_migrations(pg_dsn, schema, SERVICES / schema / "migrations")
    web = build_web(demo_web_config(seed=7, hosts=3, pages=30))
    reachable = sorted({normalize_url(u) for u in web.reachable(web.home_pages())})
    fetched, blocked = reachable[:-2], reachable[-2:-1]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for seq, url in enumerate(fetched, start=1):
            conn.execute("INSERT INTO scheduler.frontier (url_fp, url, host, status, fetch_seq) "
                         "VALUES (%s, %s, 'h.test', 'fetched', %s)", (normalized_fingerprint(url), url, seq))
        for url in blocked:
            conn.execute("INSERT INTO scheduler.frontier (url_fp, url, host, status) VALUES (%s, %s, 'h.test', "
                         "'blocked')", (normalized_fingerprint(url), url))
        conn.execute("INSERT INTO scheduler.hosts (host, partition) VALUES ('h.test', 0)")
        report = crawl_report(conn, web, [], crawl_seconds=2.0, min_delay=1.0)
    assert report["pages_fetched"] == len(fetched)
    assert report["missed"] == 2
    assert report["robots_blocked"] == 1
    assert report["hosts"] == 1
    assert report["failed"] == 0
    assert (report["links"], report["bad_links"], report["duplicates"]) == (0, 0, 0)
    assert report["pages_per_second"] == round(len(fetched) / 2.0, 1)
    assert report["politeness"]["ok"]
