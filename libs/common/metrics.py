"""Prometheus metrics: the shared instruments, and the HTTP endpoint every service exposes.

Instruments that more than one service sets, or that the dashboard
(``deploy/grafana/trawl-dashboard.json``) reads across services, are defined here once;
instruments of one service's own work live beside that work (``services/fetcher/worker.py``,
``services/extractor/handler.py``, ``services/importance/handler.py``).

A labelled instrument has no series until its first labelled use, so a dashboard panel of an
event that has not happened yet (no dead letter, no retry) would read "No data" rather than 0.
Every label set known in advance is therefore created at zero when its owner starts: the
``declare_*`` functions below, and beside each service's own instruments.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from prometheus_client import Counter, Gauge, Histogram, start_http_server

log = logging.getLogger(__name__)

MESSAGES_CONSUMED = Counter(
    "trawl_messages_consumed_total", "Messages consumed and processed.", ["service", "topic"]
)
MESSAGES_PRODUCED = Counter("trawl_messages_produced_total", "Messages produced.", ["service", "topic"])
DEAD_LETTERS = Counter(
    "trawl_dead_letters_total", "Messages sent to the dead-letter topic.", ["service", "topic", "reason"]
)
HANDLER_RETRIES = Counter(
    "trawl_handler_retries_total", "Processing attempts that failed and were retried.", ["service", "topic", "kind"]
)
BATCH_SECONDS = Histogram(
    "trawl_batch_seconds", "Time to process one consumed batch.", ["service"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
CONSUMER_LAG = Gauge(
    "trawl_consumer_lag", "Messages behind the high watermark, per partition this pod owns (from librdkafka stats).",
    ["service", "topic", "partition"],
)
CONSUMER_LAG_CLAMPED = Counter(
    "trawl_consumer_lag_clamped_total",
    "Lag readings below zero (a broker reporting a high watermark that is too low), exported as 0.",
    ["service", "topic"],
)
FRONTIER_URLS = Gauge("trawl_frontier_urls", "URLs in the frontier, by status (queued, in_flight, ...).", ["status"])
HOSTS_IN_FLIGHT = Gauge("trawl_frontier_hosts_in_flight", "Hosts with at least one fetch request out.")
OLDEST_IN_FLIGHT_SECONDS = Gauge(
    "trawl_frontier_oldest_in_flight_seconds",
    "Age of the oldest fetch request still waiting for its outcome (a stuck host or fetcher shows here).",
)
DEDUP_VERDICTS = Counter("trawl_dedup_verdicts_total", "Duplicate verdicts given, by verdict.", ["verdict"])
FRESHNESS_MODELS = Gauge(
    "trawl_freshness_models", "Freshness models in use, by key level (path or host).", ["level"]
)
FRESHNESS_ERRORS = Counter(
    "trawl_freshness_model_errors_total", "Freshness model failures, by kind (training, prediction).", ["kind"]
)
UP = Gauge("trawl_service_up", "1 while the service is serving, 0 while it starts or stops.", ["service"])
STARTUP_RETRIES = Counter(
    "trawl_startup_retries_total", "Start attempts that found a dependency unreachable and were retried.", ["service"]
)


# The label values the code counts with: every one is created at zero by the declare_* functions.
UNDECODABLE = "undecodable"  # dead letter: not a valid message of its topic's type
HANDLER_FAILED = "handler_failed"  # dead letter: the handler kept failing
DEAD_LETTER_REASONS = (UNDECODABLE, HANDLER_FAILED)
RETRY_KINDS = ("transient", "error")  # a dependency that is away (retried for ever); any other failure
FRESHNESS_LEVELS = ("host", "path")
FRESHNESS_ERROR_KINDS = ("training",)


def declare_service(service: str) -> None:
    """Creates at zero the series every service process exports (before it serves, ``trawl_service_up`` is 0)."""
    UP.labels(service).set(0)
    STARTUP_RETRIES.labels(service)


def declare_consumer(service: str, topics: Mapping[str, str]) -> None:
    """Creates at zero the per-topic series a consumer of ``service`` counts into.

    ``topics`` maps each consumed topic's name on the broker (prefixed: the dead letters' ``topic``
    label) to its declared name (the ``topic`` label of the retries and clamped lag readings).
    """
    for broker_name, declared in topics.items():
        for reason in DEAD_LETTER_REASONS:
            DEAD_LETTERS.labels(service, broker_name, reason)
        for kind in RETRY_KINDS:
            HANDLER_RETRIES.labels(service, declared, kind)
        CONSUMER_LAG_CLAMPED.labels(service, declared)


def declare_freshness() -> None:
    """Creates at zero the freshness models' series (the scheduler's, which plans with them)."""
    for level in FRESHNESS_LEVELS:
        FRESHNESS_MODELS.labels(level).set(0)
    for kind in FRESHNESS_ERROR_KINDS:
        FRESHNESS_ERRORS.labels(kind)


def start_metrics_server(port: int, host: str = "127.0.0.1") -> int:
    """Serves /metrics on ``port`` (0: none). Returns the port."""
    if port <= 0:
        return 0
    start_http_server(port, addr=host)
    log.info("metrics on http://%s:%s/metrics", host, port)
    return port
