"""Topics created with their declared partition counts, and the identity of each topic.

Topics must never be created implicitly by a first produce: Tansu gives auto-created
topics 4 partitions, and a stream processor whose source topic and table disagree on
partition count crashes. Every client turns automatic creation off
(``allow.auto.create.topics``); the init job, ``trawl up`` and every service at start
create the declared topics that are missing (``ensure_topics``).

A topic's id (a UUID the broker gives it at creation) tells one incarnation of a topic
from the next: a broker that lost its data (Tansu's memory-only build after a restart)
comes back without the topic, and the topic created again has a new id. Services compare
the ids they started with against the broker's (:mod:`libs.common.kafka.broker_watch`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

log = logging.getLogger(__name__)


class TopicSetupError(RuntimeError):
    """A declared topic could not be created, or exists with another partition count."""


class BrokerUnreachable(ConnectionError):
    """The broker did not answer a metadata request in time."""


@dataclass(frozen=True)
class TopicsReady:
    created: list[str] = field(default_factory=list)  # the topics this call created
    ids: dict[str, str] = field(default_factory=dict)  # every wanted topic's id ('' when the broker gives none)


def admin_client(bootstrap: str) -> AdminClient:
    # librdkafka's own connection errors are silenced: callers say what failed, once.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def partition_counts(admin: AdminClient, timeout: float) -> dict[str, int]:
    """Every topic's partition count; raises BrokerUnreachable when the broker does not answer."""
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(f"no metadata within {timeout:g} s: {exc}") from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def topic_ids(admin: AdminClient, names: Sequence[str], timeout: float) -> dict[str, str | None]:
    """Each topic's id, None for a topic the broker does not have; raises BrokerUnreachable."""
    if not names:
        return {}
    futures = admin.describe_topics(TopicCollection(list(names)), request_timeout=timeout)
    ids: dict[str, str | None] = {}
    for name, future in futures.items():
        try:
            ids[name] = str(future.result(timeout=timeout + 1).topic_id or "")
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                ids[name] = None
            else:
                raise BrokerUnreachable(f"cannot describe {name}: {exc}") from exc
        except TimeoutError as exc:  # concurrent.futures' TimeoutError is this one on 3.11
            raise BrokerUnreachable(f"cannot describe {name} within {timeout:g} s") from exc
    return ids


def ensure_topics(bootstrap: str, specs: Iterable[tuple[str, int]], *, replication_factor: int = 1,
                  timeout: float = 30.0) -> TopicsReady:
    """Creates the missing topics of ``specs`` (name, partitions), waits until metadata lists them.

    Idempotent: existing topics are left alone, and several processes may run it at once.
    Raises :class:`TopicSetupError` when an existing topic has a different partition count
    than declared, :class:`BrokerUnreachable` when the broker does not answer.
    """
    wanted = dict(specs)
    admin = admin_client(bootstrap)
    existing = partition_counts(admin, timeout)
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
                    raise TopicSetupError(f"could not create topic {name}: {exc}") from exc
        _wait_listed(admin, wanted, timeout)
        log.info("created topics %s", ", ".join(f"{name}[{wanted[name]}]" for name in missing))
    ids = topic_ids(admin, list(wanted), timeout)
    return TopicsReady(missing, {name: topic_id or "" for name, topic_id in ids.items()})


def _wait_listed(admin: AdminClient, wanted: dict[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        existing = partition_counts(admin, timeout)
        if all(name in existing for name in wanted):
            _check_counts(wanted, existing)
            return
        if time.monotonic() >= deadline:
            absent = sorted(set(wanted) - set(existing))
            raise TopicSetupError(f"topics still missing from metadata after {timeout:.0f}s: {absent}")
        time.sleep(0.05)


def _check_counts(wanted: dict[str, int], existing: dict[str, int]) -> None:
    wrong = {name: existing[name] for name in wanted if name in existing and existing[name] != wanted[name]}
    if wrong:
        detail = ", ".join(f"{name} has {count}, declared {wanted[name]}" for name, count in wrong.items())
        raise TopicSetupError(f"topics exist with the wrong partition count: {detail}")
