"""A large host split into path groups, fetched by two fetchers at once, stays within its rate.

The host answers slowly (1 s) and asks for a Crawl-delay of 0.5 s; the fetchers' response-time
factor is low, so the host's gap is the Crawl-delay. Split into two groups (an operator's host
policy), its requests are keyed ``host#0`` and ``host#1``; the host is picked so that the two
keys' partitions belong to different fetcher processes. Judged from the simulated web's request
log: every page is fetched once, the two groups were fetched in parallel (two requests in
flight at once, never more than the groups), and over both groups the host got at most N
requests per N delays (the issue's "each group waits N times the host's delay").

Not asserted, because it does not hold: that any two starts are one delay apart. The
scheduler spaces its dispatches one gap apart (its shared token), but a fetcher may hold a
request on its own clock for the host (after its robots.txt fetch, or after its group's
previous response), so that request starts late and the other group's next one comes soon
after it (0.29 s and 0.03 s after, with a 0.5 s delay, in two runs; see docs/services/scheduler.md).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from cli.simweb_thread import BackgroundSimWeb
from cli.stack import health
from cli.stack.processes import ServiceProcess, owned_partitions
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import FETCH_REQUESTS
from libs.localinfra.ports import free_port
from libs.simweb.log_checks import max_concurrency_per_host
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_harness import CrawlStack
from tests.e2e.handmade_web import handmade_web

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CRAWL_DELAY, LATENCY = 0.5, 1.0
CANDIDATES = [f"big-{i}.test" for i in range(8)]
SECTIONS = ("news", "sport", "arts")
PAGES_PER_SECTION = 6
# Delivery through the broker may hold one request back a little longer than another: starts
# may come this much closer together than the scheduler's spacing.
JITTER = 0.1


def site(host: str) -> dict[str, list[str]]:
    pages = {f"/{s}/{i}": [f"http://{host}/{s}/{(i + 1) % PAGES_PER_SECTION}"]
             for s in SECTIONS for i in range(PAGES_PER_SECTION)}
    return {"/": [f"http://{host}{path}" for path in pages], **pages}


def owned(log: Path, topic: str) -> set[int]:
    """The partitions of ``topic`` a fetcher owns now, replayed from its log's assigned/revoked lines."""
    return {number for name, number in owned_partitions(log) if name == topic}


def owners(logs: list[Path], topic: str) -> dict[int, int]:
    """Partition -> index of the fetcher (in ``logs``) that owns it, once the two share all 12 partitions."""
    deadline = time.monotonic() + 60
    while True:
        sets = [owned(log, topic) for log in logs]
        if all(sets) and not sets[0] & sets[1] and len(sets[0] | sets[1]) == FETCH_REQUESTS.partitions:
            return {part: index for index, parts in enumerate(sets) for part in parts}
        assert time.monotonic() < deadline, f"the two fetchers did not share {topic}: {sets}"
        time.sleep(0.5)


def page_requests(log: list[RequestRecord], host: str) -> list[RequestRecord]:
    return sorted((r for r in log if r.host == host and r.path != "/robots.txt"), key=lambda r: r.started_at)


def test_a_split_host_is_fetched_by_two_fetchers_within_its_rate(
    kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    web = handmade_web({h: site(h) for h in CANDIDATES}, {h: CRAWL_DELAY for h in CANDIDATES},
                       {h: LATENCY for h in CANDIDATES})
    simweb = BackgroundSimWeb(web)
    proxy = simweb.start()
    prefix = make_unique_name("split") + "."
    logs = tmp_path_factory.mktemp("logs")
    stack = CrawlStack(kafka_bootstrap, pg_dsn, prefix, proxy, logs)
    fetcher_env = {**stack.processes["fetcher"].env, "TRAWL_FETCHER_GROUP": f"{prefix}fetcher",
                   "TRAWL_FETCHER_RESPONSE_TIME_FACTOR": "0.25"}
    stack.processes["fetcher"].env.update(fetcher_env)
    address = f"127.0.0.1:{free_port()}"
    second = ServiceProcess("fetcher.2", {**fetcher_env, "TRAWL_GRPC_ADDRESS": address}, logs / "fetcher.2.log",
                            module="services.fetcher")
    try:
        stack.start()
        second.start()
        deadline = time.monotonic() + 60
        while health.check(address) != "SERVING":
            assert second.alive() and time.monotonic() < deadline, "the second fetcher did not start"
            time.sleep(0.2)
        time.sleep(3)  # let the group settle with both members
        owner = owners([stack.processes["fetcher"].log_path, logs / "fetcher.2.log"], prefix + FETCH_REQUESTS.name)
        parts = FETCH_REQUESTS.partitions
        host = next(h for h in CANDIDATES
                    if owner[partition_for(f"{h}#0", parts)] != owner[partition_for(f"{h}#1", parts)])
        with stack.admin() as admin:
            admin.set_host_policy(host, partition_groups=2)
            reply = admin.add_seeds([f"http://{host}{path}" for path in site(host)])
        assert reply["accepted"] == len(site(host))
        stack.wait_until_done(timeout=180)
    finally:
        second.stop(timeout=30)
        stack.stop()
        simweb.stop()

    requests = page_requests(list(simweb.request_log), host)
    assert Counter(r.path for r in requests) == Counter(list(site(host)))  # every page once
    assert max_concurrency_per_host(requests)[host] == 2  # the two groups were fetched in parallel
    groups = 2
    spans = [requests[i + groups].started_at - requests[i].started_at for i in range(len(requests) - groups)]
    assert min(spans) >= groups * CRAWL_DELAY - JITTER, [round(g, 3) for g in spans]
