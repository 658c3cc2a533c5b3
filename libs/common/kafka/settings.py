"""Kafka client settings shared by every service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from libs.common.settings import setting


@dataclass(frozen=True)
class KafkaSettings:
    bootstrap: str = setting("TRAWL_KAFKA_BOOTSTRAP", "127.0.0.1:9092", "Kafka bootstrap servers, host:port[,...].")
    topic_prefix: str = setting(
        "TRAWL_TOPIC_PREFIX", "", "Prefix of every topic name (lets several crawls share one cluster)."
    )
    compression: str = setting("TRAWL_KAFKA_COMPRESSION", "lz4", "Producer compression codec.")
    linger_ms: int = setting("TRAWL_KAFKA_LINGER_MS", 5, "How long the producer waits to fill a batch.")
    session_timeout_ms: int = setting(
        "TRAWL_KAFKA_SESSION_TIMEOUT_MS", 6000, "Consumer group session timeout (a first assignment takes ~half)."
    )
    heartbeat_interval_ms: int = setting(
        "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS", 1500, "Consumer group heartbeat interval."
    )
    max_poll_interval_ms: int = setting(
        "TRAWL_KAFKA_MAX_POLL_INTERVAL_MS", 300000, "Longest gap between polls before the consumer is evicted."
    )
    fetch_wait_max_ms: int = setting(
        "TRAWL_KAFKA_FETCH_WAIT_MAX_MS",
        100,
        "Longest a consumer's fetch waits for data: bounds the latency each topic hop adds.",
    )
    batch_wait_ms: int = setting(
        "TRAWL_KAFKA_BATCH_WAIT_MS",
        200,
        "How long a consumed batch waits to fill once records came, unless full (the pipeline's consumers:"
        " extractor, dedup, linkbase, importance). Each hop adds up to this much latency to a new page's links"
        " reaching the frontier when records trickle in; a busy crawl fills its batches anyway.",
    )
    loop_fetch_wait_max_ms: int = setting(
        "TRAWL_KAFKA_LOOP_FETCH_WAIT_MAX_MS",
        100,
        "Fetch wait of the two consumers on the fetch loop (the fetcher's requests, the scheduler's outcomes and"
        " discoveries): a host's next request waits for both hops, so this can stay short while the other"
        " stages wait longer (TRAWL_KAFKA_FETCH_WAIT_MAX_MS) for fewer empty fetches.",
    )
    max_message_bytes: int = setting(
        "TRAWL_KAFKA_MAX_MESSAGE_BYTES",
        4 * 1024 * 1024,
        "Largest message a producer sends; checked in the client since not every broker enforces it.",
    )
    max_attempts: int = setting(
        "TRAWL_KAFKA_MAX_ATTEMPTS", 3, "Attempts at processing a message before it is dead-lettered."
    )
    stall_seconds: float = setting(
        "TRAWL_KAFKA_STALL_SECONDS",
        20.0,
        "How long a service may fail to make progress through Kafka (its producer's messages unacknowledged,"
        " the broker unanswering) before it reports NOT_SERVING and exits with status 1 for its supervisor to"
        " restart it. A broker that comes back without the topics the service started with (a memory-only"
        " broker restarted) ends it at once. 0: never.",
    )
    ensure_topics: bool = setting(
        "TRAWL_KAFKA_ENSURE_TOPICS",
        True,
        "Whether a service creates the declared topics that are missing when it starts (with their declared"
        " partition counts and the broker's default replication factor; automatic creation by a produce is"
        " always off).",
    )
    lag_metrics_interval_ms: int = setting(
        "TRAWL_KAFKA_LAG_METRICS_INTERVAL_MS",
        10000,
        "How often a consumer exports its lag (trawl_consumer_lag) from librdkafka's statistics (0: never).",
    )

    def topic(self, name: str) -> str:
        return self.topic_prefix + name

    def producer_config(self, client_id: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "client.id": client_id,
            "compression.type": self.compression,
            "linger.ms": self.linger_ms,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "acks": "all",
            "message.max.bytes": self.max_message_bytes + 64 * 1024,
            "allow.auto.create.topics": False,  # see libs.common.kafka.topic_admin
        }

    def consumer_config(self, group_id: str, client_id: str, assignment: str = "cooperative-sticky",
                        fetch_wait_ms: int | None = None) -> dict[str, Any]:
        """librdkafka's consumer configuration; ``fetch_wait_ms`` replaces ``fetch_wait_max_ms`` (see
        ``loop_fetch_wait_max_ms``)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": group_id,
            "client.id": client_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",  # no committed offset (a new group, a broker that lost them)
            "allow.auto.create.topics": False,
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": self.heartbeat_interval_ms,
            "max.poll.interval.ms": max(self.max_poll_interval_ms, self.session_timeout_ms),
            "partition.assignment.strategy": assignment,
            "fetch.max.bytes": 8 * 1024 * 1024,
            "fetch.wait.max.ms": self.fetch_wait_max_ms if fetch_wait_ms is None else fetch_wait_ms,
        }
