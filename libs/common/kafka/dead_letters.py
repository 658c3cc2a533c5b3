"""Dead-letter sink: messages that cannot be decoded or keep failing go to trawl.dead-letters."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from google.protobuf.message import Message

from libs.common import metrics
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import DEAD_LETTERS
from libs.common.wire import messages as pb

log = logging.getLogger(__name__)


LOG_FIELDS = ("url", "host")


def log_fields(message: Message | None) -> dict[str, str]:
    """The ``url`` and ``host`` of a message that has them (most topics' messages do), for log lines."""
    if message is None:
        return {}
    names = message.DESCRIPTOR.fields_by_name
    return {name: value for name in LOG_FIELDS if name in names and (value := getattr(message, name))}


class DeadLetterSink:
    def __init__(self, producer: TopicProducer, service: str) -> None:
        self._producer = producer
        self._service = service
        self.count = 0

    def send(
        self,
        *,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        error: str,
        reason: str,
        attempts: int,
        context: Mapping[str, str] | None = None,
    ) -> None:
        """``context``: extra log fields (the message's url and host when it could be decoded)."""
        letter = pb.DeadLetter(
            source_topic=topic,
            source_partition=partition,
            source_offset=offset,
            key=key or b"",
            value=(value or b"")[: 1024 * 1024],
            error=error[:4000],
            service=self._service,
            failed_at_ms=int(time.time() * 1000),
            attempts=attempts,
        )
        self._producer.send(DEAD_LETTERS, (key or b"").decode("utf-8", "replace"), letter)
        self.count += 1
        metrics.DEAD_LETTERS.labels(self._service, topic, reason).inc()
        log.warning(
            "dead-lettered %s[%s]@%s: %s",
            topic, partition, offset, error[:300],
            extra={"topic": topic, "partition": partition, "offset": offset, "reason": reason,
                   "key": (key or b"").decode("utf-8", "replace"), **(context or {})},
        )
