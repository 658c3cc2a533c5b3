"""One-shot preparation of a deployment: every topic with its declared partition count, every schema.

    python -m cli.stack.init_job

Run once before the services (the ``init`` service of docker-compose, the ``trawl-init``
Job on Kubernetes). It waits, within a bound, until Kafka and PostgreSQL accept
connections, then creates the missing topics and applies the pending migrations of every
service. Safe to run again: existing topics and applied migrations are left alone, and a
topic that exists with another partition count stops it with a message saying which.
Exit status: 0 done, 1 a dependency never became reachable or a step failed, 2 bad settings.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import psycopg
from confluent_kafka.admin import AdminClient

from cli.stack.local_stack import migrate_all
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.settings import KafkaSettings
from libs.common.logs import configure_logging
from libs.common.service import RuntimeSettings
from libs.common.settings import SettingsError, load_settings, setting
from libs.common.topics import ALL_TOPICS
from libs.localinfra.errors import LocalInfraError
from libs.localinfra.topics import create_topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InitJobSettings:
    replication_factor: int = setting(
        "TRAWL_TOPIC_REPLICATION_FACTOR", 1, "Replication factor of the topics the init job creates."
    )
    wait_seconds: float = setting(
        "TRAWL_INIT_WAIT_SECONDS", 180.0, "How long the init job waits for Kafka and PostgreSQL to accept connections."
    )


class NotReachable(RuntimeError):
    """A dependency did not accept connections within the wait."""


def wait_until(name: str, attempt: Callable[[], None], timeout: float, interval: float = 2.0) -> None:
    """Calls ``attempt`` until it returns without raising, for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    tries = 0
    while True:
        tries += 1
        try:
            attempt()
        except Exception as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotReachable(f"{name} not reachable after {timeout:.0f}s ({tries} attempts): {exc}") from exc
            log.info("waiting for %s (attempt %d, %.0fs left): %s", name, tries, left, exc)
            time.sleep(min(interval, left))
        else:
            log.info("%s is reachable", name)
            return


def kafka_reachable(bootstrap: str) -> Callable[[], None]:
    def attempt() -> None:
        # librdkafka's own connection errors are silenced: wait_until logs each failed attempt once.
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=3.0)

    return attempt


def postgres_reachable(dsn: str) -> Callable[[], None]:
    def attempt() -> None:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")

    return attempt


def run(env: Mapping[str, str]) -> None:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    settings = load_settings(InitJobSettings, env)
    wait_until(f"Kafka at {kafka.bootstrap}", kafka_reachable(kafka.bootstrap), settings.wait_seconds)
    wait_until("PostgreSQL", postgres_reachable(database.dsn), settings.wait_seconds)
    specs = [(kafka.topic(t.name), t.partitions) for t in ALL_TOPICS]
    created = create_topics(kafka.bootstrap, specs, replication_factor=settings.replication_factor)
    log.info("topics ready: %d declared, %d created", len(specs), len(created),
             extra={"topics_created": ",".join(created) or "-"})
    applied = migrate_all(database.dsn)
    for service, versions in applied.items():
        log.info("schema %s ready: %s", service, f"applied {versions}" if versions else "up to date")


def main(env: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    try:
        runtime = load_settings(RuntimeSettings, env)
    except SettingsError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 2
    configure_logging("init", runtime.log_level)
    try:
        run(env)
    except SettingsError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 2
    except (NotReachable, LocalInfraError) as exc:
        log.error("init failed: %s", exc)
        return 1
    except Exception:
        log.exception("init failed")
        return 1
    log.info("init done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
