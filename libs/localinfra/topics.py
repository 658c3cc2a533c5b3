"""Creating topics with their declared partition counts.

Topics must never be created implicitly by a first produce: Tansu gives
auto-created topics 4 partitions, and a stream processor whose source topic
and table disagree on partition count crashes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from libs.localinfra.errors import LocalInfraError

logger = logging.getLogger(__name__)


def _partition_counts(admin: AdminClient, timeout: float) -> dict[str, int]:
    metadata = admin.list_topics(timeout=timeout)
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def create_topics(
    bootstrap: str,
    specs: Iterable[tuple[str, int]],
    *,
    replication_factor: int = 1,
    timeout: float = 30.0,
) -> list[str]:
    """Create the missing topics of ``specs`` (name, partitions) and wait until metadata lists them.

    Idempotent: existing topics are left alone. Returns the names created by
    this call. Raises :class:`LocalInfraError` when an existing topic has a
    different partition count than declared.
    """
    wanted = dict(specs)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = _partition_counts(admin, timeout)
    _check_counts(wanted, existing)
    missing = [name for name in wanted if name not in existing]
    if missing:
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=wanted[name], replication_factor=replication_factor) for name in missing],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        for name, future in futures.items():
            try:
                future.result(timeout=timeout)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise LocalInfraError(f"could not create topic {name}: {exc}") from exc
        _wait_listed(admin, wanted, timeout)
        logger.info("created topics %s", ", ".join(f"{name}[{wanted[name]}]" for name in missing))
    return missing


def _wait_listed(admin: AdminClient, wanted: dict[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        existing = _partition_counts(admin, timeout)
        if all(name in existing for name in wanted):
            _check_counts(wanted, existing)
            return
        if time.monotonic() >= deadline:
            absent = sorted(set(wanted) - set(existing))
            raise LocalInfraError(f"topics still missing from metadata after {timeout:.0f}s: {absent}")
        time.sleep(0.05)


def _check_counts(wanted: dict[str, int], existing: dict[str, int]) -> None:
    wrong = {name: existing[name] for name in wanted if name in existing and existing[name] != wanted[name]}
    if wrong:
        detail = ", ".join(f"{name} has {count}, declared {wanted[name]}" for name, count in wrong.items())
        raise LocalInfraError(f"topics exist with the wrong partition count: {detail}")
