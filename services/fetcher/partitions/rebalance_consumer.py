"""The fetch-request consumer, told before it gives a partition up and when it gets one.

:class:`~libs.common.kafka.consumer.TopicConsumer` commits what is done and forgets a
partition when it is revoked; requests still in hand would go on being fetched while the new owner
starts on the same records. This consumer first lets a
:class:`RebalanceListener` settle the partition's requests on the event loop
(the rebalance waits for it: librdkafka calls the callback from ``consume``, in
the consumer's thread), and tells it the time each partition was assigned.
On stop it settles every partition before the usual drain, flush and commit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any, Protocol

from confluent_kafka import Consumer, TopicPartition

from services.fetcher.partitions.in_hand_consumer import InHandConsumer

logger = logging.getLogger(__name__)

__all__ = ["RebalanceListener", "RebalancingConsumer"]

_COMMITTED_TIMEOUT = 5.0


class RebalanceListener(Protocol):
    """What the consumer tells about partition ownership; partitions are ``(topic name, partition)``."""

    def assigned(self, partitions: list[tuple[str, int]], first: frozenset[tuple[str, int]] = frozenset()) -> None:
        """Partitions just assigned; called in the consumer's thread before any of their records is handed out.

        ``first``: those of them the group never committed an offset for, so no earlier member finished
        (and, but for one killed within its first commit interval, started) any of their requests.
        """
        ...

    async def revoking(self, partitions: list[tuple[str, int]]) -> None:
        """Partitions about to be given up: when this returns, nothing of theirs may still be in hand."""
        ...


class RebalancingConsumer(InHandConsumer):
    """An :class:`InHandConsumer` that lets ``listener`` settle partitions it gives up.

    ``revoke_timeout`` bounds the wait for the listener inside a rebalance.
    """

    def __init__(self, *args: Any, listener: RebalanceListener, revoke_timeout: float = 60.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listener = listener
        self._revoke_timeout = revoke_timeout
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await super().start()

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Stop consuming, settle every owned partition, then drain, flush, commit and leave."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=drain_timeout)
        with self._lock:
            owned = sorted(self.assigned)
        if owned:
            try:
                await asyncio.wait_for(self._listener.revoking(owned), self._revoke_timeout)
            except Exception:
                logger.exception("settling partitions before stopping failed")
        await super().stop(drain_timeout)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        super()._on_assign(consumer, partitions)
        first = self._never_committed(consumer, partitions)
        self._listener.assigned([(tp.topic, tp.partition) for tp in partitions], first)

    @staticmethod
    def _never_committed(consumer: Consumer, partitions: list[TopicPartition]) -> frozenset[tuple[str, int]]:
        """The partitions the group has no committed offset for (none when the look-up fails)."""
        if not partitions:
            return frozenset()
        try:
            committed = consumer.committed(partitions, timeout=_COMMITTED_TIMEOUT)
        except Exception as exc:  # the safe answer: every partition may have had an owner
            logger.warning("could not read the committed offsets of %d partitions: %s", len(partitions), exc)
            return frozenset()
        return frozenset((tp.topic, tp.partition) for tp in committed if tp.error is None and tp.offset < 0)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        loop = self._loop
        parts = [(tp.topic, tp.partition) for tp in partitions]
        if loop is not None and not loop.is_closed() and parts:
            future = asyncio.run_coroutine_threadsafe(self._listener.revoking(parts), loop)
            try:
                future.result(self._revoke_timeout)
            except concurrent.futures.TimeoutError:
                future.cancel()
                logger.warning("settling revoked partitions took over %.0fs; going on", self._revoke_timeout)
            except Exception:
                logger.exception("settling revoked partitions failed")
        super()._on_revoke(consumer, partitions)
