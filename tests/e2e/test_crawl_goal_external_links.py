"""A crawl goal of external links spends its page budget on the site whose pages carry them.

Two pairs of sites of the same shape (30 pages in a tree, all seeded): on one site of each
pair every page links to six pages of other registered domains, on the other almost none
do. The same policy (R2, batches of 2 pages) and budget (24 pages) run over the first pair
with the goal ``external_links``, then over the second pair with the goal ``documents``:
judged from the simulated web's request log, the link-rich site gets most of the budget
under the first goal, and under the second (every page is worth one document, so the tie
goes to the first site in the goal's order, the poor one) it does not. The rewards come
from the extractor's link counts, through trawl.page-link-counts, into the scheduler.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from cli.simweb_thread import BackgroundSimWeb
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_harness import CrawlStack
from tests.e2e.handmade_web import handmade_web, tree_site

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PAGES, FANOUT, EXTERNAL, BUDGET, STEP = 30, 3, 6, 24, 2


def external_links(rich: bool) -> list[list[str]]:
    """Per page: six external URLs (rich) or one on every fifth page (poor), out of 16 on four other domains."""
    if rich:
        return [[f"http://ext-{j % 4}.test/e{(i + j) % 16}" for j in range(EXTERNAL)] for i in range(PAGES)]
    return [[f"http://ext-{i % 4}.test/e{i % 16}"] if i % 5 == 4 else [] for i in range(PAGES)]


SITES = {f"{kind}-{pair}.test": tree_site(f"{kind}-{pair}.test", PAGES, FANOUT, external_links(kind == "rich"))
         for pair in ("a", "b") for kind in ("rich", "poor")}


def pages_requested(log: list[RequestRecord], hosts: list[str]) -> Counter[str]:
    return Counter(r.host for r in log if r.host in hosts and r.path != "/robots.txt")


def spend(stack: CrawlStack, goal: str, sites: list[str]) -> dict[str, Any]:
    """Sets the goal over ``sites``, seeds every page of them, waits until its budget is spent and settled."""
    with stack.admin() as admin:
        admin.set_crawl_goal("r2", goal, sites, budget=BUDGET, step=STEP, parallel=1)
        reply = admin.add_seeds([f"http://{host}{path}" for host in sites for path in SITES[host]])
        assert reply["accepted"] == PAGES * len(sites)
        deadline = time.monotonic() + 120
        settled_since: float | None = None
        while True:
            state = admin.crawl_goal()
            done = state["spent"] >= BUDGET and all(s["in_flight"] == 0 for s in state["sites"])
            now = time.monotonic()
            settled_since = (settled_since or now) if done else None
            if settled_since is not None and now - settled_since >= 2.0:  # the last link counts are in
                return {s["site"]: s for s in admin.crawl_goal()["sites"]}
            assert now < deadline, f"the goal's budget was not spent in time: {state}"
            time.sleep(0.25)


def test_the_external_links_goal_shifts_the_budget_to_the_link_rich_site(
    kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    web = handmade_web(SITES)
    simweb = BackgroundSimWeb(web)
    proxy = simweb.start()
    stack = CrawlStack(kafka_bootstrap, pg_dsn, make_unique_name("goal") + ".", proxy,
                       tmp_path_factory.mktemp("logs"))
    try:
        stack.start()
        links_goal = spend(stack, "external_links", ["poor-a.test", "rich-a.test"])
        by_links = pages_requested(list(simweb.request_log), ["poor-a.test", "rich-a.test"])
        documents_goal = spend(stack, "documents", ["poor-b.test", "rich-b.test"])
        by_documents = pages_requested(list(simweb.request_log), ["poor-b.test", "rich-b.test"])
    finally:
        stack.stop()
        simweb.stop()

    # the server saw the budget, split as the scheduler's goal state says
    assert sum(by_links.values()) == BUDGET and sum(by_documents.values()) == BUDGET
    assert {site: s["pulls"] for site, s in links_goal.items()} == dict(by_links)
    assert {site: s["pulls"] for site, s in documents_goal.items()} == dict(by_documents)
    # the rewards are the extractor's counts: six external links on every page of the rich site
    assert links_goal["rich-a.test"]["reward"] == EXTERNAL * by_links["rich-a.test"]
    assert links_goal["poor-a.test"]["reward"] <= by_links["poor-a.test"] / 2
    # the goal moves the budget: most of it to the rich site for links, most of it elsewhere for documents
    assert by_links["rich-a.test"] >= 0.6 * BUDGET, by_links
    assert by_documents["rich-b.test"] <= 0.3 * BUDGET, by_documents
