"""Creating topics with their declared partition counts (see :mod:`libs.common.kafka.topic_admin`)."""

from __future__ import annotations

from collections.abc import Iterable

from libs.common.kafka.topic_admin import BrokerUnreachable, TopicSetupError, ensure_topics
from libs.localinfra.errors import LocalInfraError


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
    different partition count than declared, or the broker does not answer.
    """
    try:
        return ensure_topics(bootstrap, specs, replication_factor=replication_factor, timeout=timeout).created
    except (TopicSetupError, BrokerUnreachable) as exc:
        raise LocalInfraError(str(exc)) from exc
