"""Settings of the scheduler service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class SchedulerSettings:
    group_id: str = setting("TRAWL_SCHEDULER_GROUP", "trawl-scheduler", "Consumer group of the scheduler.")
    max_in_flight: int = setting(
        "TRAWL_SCHEDULER_MAX_IN_FLIGHT",
        2000,
        "Most fetch requests in flight over all hosts (backpressure): what the fetchers hold, waiting for their"
        " hosts' gaps or on the wire (at most TRAWL_FETCHER_MAX_IN_HAND each, TRAWL_FETCHER_CONCURRENCY of them"
        " on the wire). Hosts with nothing out take it first, so it bounds the hosts crawled at once.",
    )
    host_queue_depth: int = setting(
        "TRAWL_SCHEDULER_HOST_QUEUE_DEPTH",
        2,
        "Requests of a host with a short gap (TRAWL_SCHEDULER_BEHIND_MAX_GAP) handed out at once: the one being"
        " fetched and those waiting their turn at the fetcher, which keeps the host's politeness (one on the wire,"
        " the gap between). 2 lets the next request start as soon as a short gap has passed, not once the outcome"
        " has come back and a round has run.",
    )
    behind_max_gap: float = setting(
        "TRAWL_SCHEDULER_BEHIND_MAX_GAP",
        0.5,
        "Seconds: a host whose gap is at least this long gets no request queued behind the one out. Its outcome has"
        " time to come back within the gap, and its next URL is chosen then (TRAWL_SCHEDULER_DISPATCH_AHEAD_SECONDS"
        " before the gap ends), with the cash its last pages passed on.",
    )
    dispatch_ahead: float = setting(
        "TRAWL_SCHEDULER_DISPATCH_AHEAD_SECONDS",
        0.3,
        "A host is handed its next request up to this long before its next allowed time: the fetcher, which keeps"
        " the gap, holds the request until then and starts it as the gap ends, not a broker hop and a dispatch round"
        " later (0: only once the time has come). Longer starts more punctually under load; shorter chooses the"
        " next URL later, knowing more.",
    )
    dispatch_interval: float = setting(
        "TRAWL_SCHEDULER_DISPATCH_INTERVAL",
        0.05,
        "How long the loop waits for a wake (new URLs, outcomes) after a dispatch round that took all that was"
        " ready; then it sleeps until the next URL may be ready (a host's gap, a retry's backoff, a revisit).",
    )
    dispatch_idle_max: float = setting(
        "TRAWL_SCHEDULER_DISPATCH_IDLE_MAX_SECONDS",
        1.0,
        "Longest sleep of the dispatch loop with nothing ready: bounds how late what the loop is not woken for"
        " is seen (another replica's writes, a URL behind a host's head that comes due first).",
    )
    dispatch_batch: int = setting("TRAWL_SCHEDULER_DISPATCH_BATCH", 200, "Most requests emitted per dispatch round.")
    consumer_batch: int = setting(
        "TRAWL_SCHEDULER_CONSUMER_BATCH",
        2000,
        "Most consumed messages handled together: a batch of fetch outcomes is applied in one transaction"
        " (larger batches apply outcomes faster, their messages held in memory at once).",
    )
    consumer_wait: float = setting(
        "TRAWL_SCHEDULER_CONSUMER_WAIT",
        0.02,
        "Seconds a consumed batch waits to fill once messages came: outcomes free their hosts soon after they"
        " arrive, not once a full batch did (late in a crawl, few hosts have work and few outcomes come at once).",
    )
    lease_seconds: float = setting(
        "TRAWL_SCHEDULER_LEASE_SECONDS",
        300.0,
        "A request with no outcome after this long is considered lost and queued again.",
    )
    unsent_check_seconds: float = setting(
        "TRAWL_SCHEDULER_UNSENT_CHECK_SECONDS",
        15.0,
        "Requests in flight for longer than this are looked up on the fetch-request topic, this often; those"
        " never sent (the scheduler died, or its flush failed, after the dispatch) are queued again at once"
        " instead of after the lease (0: off).",
    )
    max_attempts: int = setting(
        "TRAWL_SCHEDULER_MAX_ATTEMPTS", 3, "Fetch attempts of a URL before it is given up (failed, with the reason)."
    )
    retry_base_seconds: float = setting(
        "TRAWL_SCHEDULER_RETRY_BASE_SECONDS", 10.0, "Backoff before a retry: base * 2^(attempt - 1)."
    )
    bandit_policy: str = setting(
        "TRAWL_SCHEDULER_BANDIT_POLICY",
        "",
        "Crawl goal over a set of sites: the site policy r1, r2, r3, quantum or recency (docs/evaluation.md);"
        " empty: no goal, every host is dispatched as usual.",
    )
    bandit_goal: str = setting(
        "TRAWL_SCHEDULER_BANDIT_GOAL",
        "documents",
        "Reward of a fetched page of the goal: documents (1 a page fetched), new_urls (URLs first"
        " discovered on it, counted when discoveries name their page) or external_links (links to another"
        " registered domain on it, counted by the extractor on trawl.page-link-counts).",
    )
    bandit_sites: tuple[str, ...] = setting(
        "TRAWL_SCHEDULER_BANDIT_SITES", (), "Hosts of the crawl goal (comma-separated), in the policy's order."
    )
    bandit_budget: int = setting(
        "TRAWL_SCHEDULER_BANDIT_BUDGET", 0, "Pages the crawl goal may fetch over its sites; 0: no limit."
    )
    bandit_step: int = setting(
        "TRAWL_SCHEDULER_BANDIT_STEP",
        10,
        "Pages of a step of the fixed rules: r2's batch, r3's first pages per site, the quantum's turn"
        " (r1 explores budget / (2 x sites) pages per site).",
    )
    bandit_parallel: int = setting(
        "TRAWL_SCHEDULER_BANDIT_PARALLEL",
        4,
        "Choices the site policy makes per dispatch round, so at most this many goal sites in flight"
        " (1: one page at a time, as in the paper).",
    )
    large_hosts: tuple[str, ...] = setting(
        "TRAWL_SCHEDULER_LARGE_HOSTS",
        (),
        "Hosts split by path across fetchers (comma-separated): their requests are keyed host#group.",
    )
    large_host_groups: int = setting(
        "TRAWL_SCHEDULER_LARGE_HOST_GROUPS",
        2,
        "Path groups of a large host: up to this many of its requests in flight, their starts spaced by"
        " the host's politeness gap.",
    )
    partition_refresh_seconds: float = setting(
        "TRAWL_SCHEDULER_PARTITION_REFRESH_SECONDS",
        600.0,
        "How often a large host's path groups are recomputed from its queued URLs.",
    )
