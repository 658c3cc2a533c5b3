"""The producer is told of failed deliveries only, and flush still raises when any message failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from libs.common.kafka.producer import POLL_EVERY, DeliveryFailed, TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_OUTCOMES
from libs.common.wire import messages as pb
from libs.localinfra.ports import free_port


@dataclass(frozen=True)
class _ShortTimeout(KafkaSettings):
    """Messages time out in librdkafka after a fraction of a second (nothing listens at the bootstrap)."""

    def producer_config(self, client_id: str) -> dict[str, Any]:
        return {**super().producer_config(client_id), "message.timeout.ms": 300}


async def test_flush_raises_when_messages_were_not_delivered() -> None:
    producer = TopicProducer(_ShortTimeout(bootstrap=f"127.0.0.1:{free_port()}", ensure_topics=False), "delivery-test")
    await producer.start()
    try:
        for i in range(POLL_EVERY * 2 + 1):  # the periodic polls serve reports too
            producer.send(FETCH_OUTCOMES, "a.test", pb.FetchOutcome(request_id=str(i)))
        assert producer.sent == POLL_EVERY * 2 + 1
        with pytest.raises(DeliveryFailed, match=f"{POLL_EVERY * 2 + 1} message\\(s\\) failed: .*timed out"):
            await producer.flush(timeout=10.0)
        await producer.flush(timeout=1.0)  # the failures were reported once
    finally:
        await producer.stop()


async def test_hooks_run_before_every_flush_and_a_failing_hook_fails_it_after_the_flush() -> None:
    producer = TopicProducer(_ShortTimeout(bootstrap=f"127.0.0.1:{free_port()}", ensure_topics=False), "hook-test")
    calls: list[str] = []

    def lazy_sender() -> None:
        calls.append("hook")

    def broken() -> None:
        calls.append("broken")
        if len(calls) <= 2:
            raise RuntimeError("could not build a message")

    producer.before_flush(lazy_sender)
    producer.before_flush(broken)
    await producer.start()
    try:
        with pytest.raises(DeliveryFailed, match="sending before the flush failed: could not build a message"):
            await producer.flush(timeout=1.0)
        assert calls == ["hook", "broken"]  # both ran: one failing does not skip the others
        await producer.flush(timeout=1.0)
        assert calls == ["hook", "broken", "hook", "broken"]
    finally:
        await producer.stop()
