"""Conditional revisits on the real broker, database and a simulated web: every page crawled once, a share
of them edited, every page revisited; the unchanged ones answer 304 and cost no extraction, dedup or link
work, the edited ones are fetched and processed again."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cli.stack.local_stack import GROUPS
from libs.common.kafka.ends import partition_ends, read_to_end
from libs.common.kafka.lag import group_lag
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_RESULTS, PAGE_LINKS, Topic
from libs.common.urls import normalize_url
from libs.simweb import SimWebConfig
from tests.e2e.crawl_harness import CrawlStack, crawl_stack

pytestmark = pytest.mark.e2e

WEB = SimWebConfig(seed=11, hosts=6, pages=90, host_size_exponent=0.3, crawl_delay_values=(0.1,), hub_host_ratio=0.0,
                   page_edit_ratio=0.25)
WORK = (FETCH_RESULTS, DOCUMENTS, DUPLICATE_VERDICTS, PAGE_LINKS)  # what a page fetched in full sets going


def ends(stack: CrawlStack) -> dict[tuple[str, int], int]:
    """Where every partition of the work topics ends now (checked against the data)."""
    partitions = [(stack.prefix + t.name, p) for t in WORK for p in range(t.partitions)]
    return {tp: end.high for tp, end in partition_ends(stack.bootstrap, partitions, verify=True).items()}


def urls_since(stack: CrawlStack, topic: Topic, starts: dict[tuple[str, int], int]) -> list[str]:
    """The URLs of the messages ``topic`` got from ``starts`` on, in the order read."""
    urls: list[str] = []

    def read(msg: Any) -> None:
        value = topic.message_type()
        value.ParseFromString(msg.value())
        urls.append(normalize_url(value.url))  # type: ignore[attr-defined]  # every work message names its page

    mine = {tp: offset for tp, offset in starts.items() if tp[0] == stack.prefix + topic.name}
    read_to_end(stack.bootstrap, mine, timeout=20.0, on_message=read)
    return urls


def settled(stack: CrawlStack, timeout: float = 120.0) -> None:
    """Once every consumer group has read everything (twice in a row)."""
    deadline = time.monotonic() + timeout
    groups = CrawlStack.groups(stack.prefix)
    quiet = 0
    while quiet < 2:
        lag = sum(p.lag for service, (_, topics) in GROUPS.items()
                  for p in group_lag(stack.bootstrap, groups[service], [stack.prefix + t for t in topics], 5.0))
        quiet = quiet + 1 if lag == 0 else 0
        assert time.monotonic() < deadline, f"the pipeline did not settle: lag {lag}"
        time.sleep(1.0)


def test_a_revisit_of_an_unchanged_page_is_a_304_and_sets_no_work_going(
        kafka_bootstrap: str, pg_dsn: str, tmp_path: Path) -> None:
    from tests.conftest import make_unique_name

    prefix = make_unique_name("e2e-conditional") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, tmp_path, WEB) as (stack, simweb, web):
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())
        stack.wait_until_done()
        settled(stack)
        fetched = {url for (url,) in stack.query("SELECT url FROM scheduler.frontier WHERE status = 'fetched'")}
        with_validators = stack.query(
            "SELECT count(*) FROM scheduler.frontier WHERE status = 'fetched'"
            " AND etag IS NOT NULL AND last_modified IS NOT NULL AND validated_at IS NOT NULL")
        assert fetched and with_validators == [(len(fetched),)]

        [(known, versions_before)] = stack.query(
            "SELECT count(DISTINCT url_fp), count(*) FROM linkbase.page_versions")
        simweb.clock.advance(WEB.page_edit_interval)  # the first round of edits
        edited = {url for url in fetched if web.revision(url, simweb.clock.now()) == 1}
        assert 0 < len(edited) < len(fetched)
        requests_before = len(simweb.request_log)
        starts = ends(stack)
        stack.query("UPDATE scheduler.frontier SET status = 'queued', attempts = 0, next_fetch_at = now()"
                    " WHERE status = 'fetched' RETURNING url_fp")  # every page due now, as a dispatch round does it
        stack.wait_until_done()
        settled(stack)

        revisits = [r for r in simweb.request_log[requests_before:] if r.path != "/robots.txt"]
        statuses = Counter(r.status for r in revisits)
        by_url = {normalize_url(r.url): r.status for r in revisits}
        assert set(by_url) == fetched and len(revisits) == len(fetched)  # each page once
        assert {u for u, s in by_url.items() if s == 200} == edited  # every edited page found
        assert statuses[304] == len(fetched) - len(edited)
        # Work only for the edited pages: a fetch result each, and what it sets going (a document, its
        # verdict, the page's links) for them alone.
        results = urls_since(stack, FETCH_RESULTS, starts)
        assert sorted(results) == sorted(edited)
        for topic in WORK[1:]:
            assert set(urls_since(stack, topic, starts)) == edited, topic.name

        outcomes = dict(stack.query("SELECT url, last_outcome FROM scheduler.frontier WHERE status = 'fetched'"))
        assert set(outcomes) == fetched
        assert {u for u, o in outcomes.items() if o == "FETCH_STATUS_NOT_MODIFIED"} == fetched - edited
        # The link base has a version of every page for the revisit: a copy of the last for each 304.
        [(versions,)] = stack.query("SELECT count(*) FROM linkbase.page_versions")
        assert versions - versions_before == known
        [(changes,)] = stack.query(
            "SELECT count(*) FROM (SELECT url_fp, count(DISTINCT content_fp) AS n FROM linkbase.page_versions"
            " GROUP BY url_fp) v WHERE n = 2")
        assert changes == len(edited)
