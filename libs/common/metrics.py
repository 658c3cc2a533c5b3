"""Prometheus metrics: the shared instruments, and the HTTP endpoint every service exposes."""

from __future__ import annotations

import logging

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
CONSUMER_LAG = Gauge("trawl_consumer_lag", "Messages behind the high watermark.", ["service", "topic", "partition"])
UP = Gauge("trawl_service_up", "1 while the service is serving.", ["service"])


def start_metrics_server(port: int, host: str = "127.0.0.1") -> int:
    """Serves /metrics on ``port`` (0: none). Returns the port."""
    if port <= 0:
        return 0
    start_http_server(port, addr=host)
    log.info("metrics on http://%s:%s/metrics", host, port)
    return port
