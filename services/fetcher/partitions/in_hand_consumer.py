"""The fetch-request consumer's mode: one task per record, up to ``slots`` requests in hand at a time.

A fetch takes seconds, mostly waiting for the network and for the host's politeness gap, so
the fetcher cannot handle a poll's records as one batch: each record is handed to its topic's
handler as a batch of one, in a task of its own, while the loop goes on consuming as long as a
slot is free. Records finish out of order; a partition's committed offset is the end of its
longest run of finished records (:class:`~libs.common.kafka.offsets.PartitionOffsets`), and
what is done is committed every ``commit_interval`` once the producer flushed what it led to.

When every slot stays taken the loop stops consuming (records librdkafka fetched ahead stay in
its queue and are handed out as soon as a slot frees) and, after ``pause_after``, pauses the
partitions, so that rebalances go on being served (see :class:`InHandConsumer`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from confluent_kafka import Consumer

from libs.common.kafka.consumer import Record, TopicConsumer
from libs.common.kafka.settings import KafkaSettings

__all__ = ["InHandConsumer"]


class InHandConsumer(TopicConsumer):
    """A :class:`TopicConsumer` that handles each record in a task of its own, up to ``slots`` at a time."""

    def __init__(self, settings: KafkaSettings, *, slots: int, commit_interval: float = 1.0,
                 pause_after: float | None = None, **kwargs: Any) -> None:
        """``pause_after`` (default ``poll_timeout``): how long every slot may stay taken before the
        partitions are paused. Until then the loop does not consume (records librdkafka fetched ahead
        stay in its queue and are handed out as soon as a slot frees) but goes on committing. Pausing
        keeps rebalances served while the slots stay full, and costs a round trip to the broker when
        it ends: librdkafka drops the records fetched ahead, and its next fetch waits for the one
        outstanding, which the broker holds up to ``fetch.wait.max.ms`` for want of data past them.
        A longer ``pause_after`` spares that when slots free within it; a rebalance waits for at most
        as long.

        ``commit_interval``: how often what is done is committed (the loop commits between polls).
        The other arguments are :class:`TopicConsumer`'s.
        """
        super().__init__(settings, **kwargs)
        self._slot_count = max(1, slots)
        self._commit_interval = commit_interval
        self._pause_after = self._poll_timeout if pause_after is None else pause_after
        self._full_since: float | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(self._slot_count)
        self._paused = False
        self.pauses = 0  # times every slot stayed taken for pause_after and the partitions were paused

    async def _drain(self, timeout: float) -> None:
        """Lets the records in hand finish (at most ``timeout``), cancelling those that do not."""
        if self._inflight:
            _done, pending = await asyncio.wait(self._inflight, timeout=timeout)
            for task in pending:
                task.cancel()

    async def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        last_commit = time.monotonic()
        while not self._stopping.is_set():
            if len(self._inflight) >= self._slot_count:
                if self._full_since is None:
                    self._full_since = time.monotonic()
                # Pausing drops the prefetched records, which are fetched again after resume (a
                # round trip per pause): wait for a slot first, pause only if none frees in time.
                await asyncio.wait(set(self._inflight), timeout=self._poll_timeout,
                                   return_when=asyncio.FIRST_COMPLETED)
            await self._adjust_pause(consumer)
            if len(self._inflight) >= self._slot_count and not self._paused:
                last_commit = await self._commit_if_due(last_commit)
                continue  # full, not paused yet: consume nothing, keep what is fetched ahead
            raw = await self._poll(consumer, max(1, self._slot_count - len(self._inflight)))
            if raw is None:
                continue
            for record in self._decode(raw):
                await self._slots.acquire()
                task = asyncio.create_task(self._process_one(record))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            last_commit = await self._commit_if_due(last_commit)

    async def _commit_if_due(self, last_commit: float) -> float:
        """Commits what is done once ``commit_interval`` has passed; the time of the last commit."""
        if time.monotonic() - last_commit < self._commit_interval:
            return last_commit
        # Positions first: a record finishing during the flush has its output sent after the
        # flush began, and committing it now could lose that output in a crash.
        positions = self._positions()
        await self._producer.flush()
        await self._call(self._commit_tracked, None, positions)
        return time.monotonic()

    async def _adjust_pause(self, consumer: Consumer) -> None:
        """Pauses the partitions once every slot has been taken for ``pause_after`` (since ``_full_since``,
        set by the loop when it finds them all taken); resumes when one frees."""
        if len(self._inflight) < self._slot_count:
            self._full_since = None
        full = self._full_since is not None and time.monotonic() - self._full_since >= self._pause_after
        if full != self._paused:
            if full:
                self.pauses += 1
            assignment = await self._call(consumer.assignment)
            await self._call(consumer.pause if full else consumer.resume, assignment)
            self._paused = full

    async def _process_one(self, record: Record[Any]) -> None:
        try:
            failure = await self._attempt([record], self._settings.max_attempts)
            if failure is not None:
                self._dead_letter(record, failure)
            self._done_all([record])
        except asyncio.CancelledError:
            pass
        finally:
            self._slots.release()
