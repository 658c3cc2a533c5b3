"""The partitions an importance instance owns: their state in memory, made durable batch by batch.

A partition is loaded from PostgreSQL the first time one of its records arrives (its
outbox is sent again then), committed once per consumed batch with the cash transfers
the batch created (``commit``), and dropped when the consumer no longer owns it or a
batch failed half-way (the next use loads the last committed state again). A snapshot
replaces a partition's changelog when the changelog grows past ``snapshot_bytes`` or the
partition has been idle for ``snapshot_idle`` seconds, and at a clean stop.

Order of effects for one batch: apply in memory, and the transfers to partitions owned here
too (``deliver_locally``); send the importance updates and flush
(they are idempotent overwrites, so sending them before the commit only means that a
batch replayed after a crash announces its pages again); commit (state, offsets,
transfers into the outbox, all or nothing, fenced by version); send the transfers and
flush. A transfer leaves the outbox with the commit of its destination, which applied it
(not when the broker acknowledged it: a broker that loses its data takes those too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from prometheus_client import Counter, Gauge

from libs.common.kafka.producer import TopicProducer
from services.importance.cash_store import CashStore, Commit, Fenced, OutboxRow, Published
from services.importance.engine import OpicConfig, OpicEngine
from services.importance.shard import Shard
from services.importance.state_codec import encode_delta, encode_snapshot
from services.importance.transfers import outbox_rows
from services.importance.updates import UPDATES_PER_MESSAGE, encode_update, encode_updates, update_tail

log = logging.getLogger(__name__)

CONVERGENCE = Gauge("trawl_importance_convergence", "OPIC error bound 1/|H| (lower is better).")
DELIVERED_LOCALLY = Counter(
    "trawl_importance_transfers_delivered_locally_total",
    "Cash transfers applied at once to a partition the same instance owns (committed with their batch, never sent):"
    " one per source, destination and batch.",
)


@dataclass
class PartitionState:
    shard: Shard
    version: int
    applied: dict[str, int]
    received_seq: list[int]
    sent_seq: list[int]
    snapshot_version: int
    hosts_saved: int
    acknowledged: dict[int, int] = field(default_factory=dict)
    changelog_bytes: int = 0
    changed_at: float = 0.0

    @property
    def partition(self) -> int:
        return self.shard.partition

    @property
    def engine(self) -> OpicEngine:
        return self.shard.engine


class OwnedPartitions:
    def __init__(self, store: CashStore, producer: TopicProducer, config: OpicConfig, transfers_topic: str,
                 updates_topic: str, *, snapshot_bytes: int = 64 << 20, snapshot_idle: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._producer = producer
        self._config = config
        self._transfers_topic = transfers_topic
        self._updates_topic = updates_topic
        self._snapshot_bytes = snapshot_bytes
        self._snapshot_idle = snapshot_idle
        self._clock = clock
        self.lock = asyncio.Lock()
        self.states: dict[int, PartitionState] = {}
        self.owned: Callable[[], set[int]] | None = None
        """Partitions the consumer owns now (set by ``main``); None: every partition seen."""
        self._task: asyncio.Task[None] | None = None

    @property
    def partitions(self) -> int:
        return self._store.partitions

    # lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self._store.ensure_partitions()
        self._task = asyncio.create_task(self._idle_snapshots(), name="importance-snapshots")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        async with self.lock:
            for state in list(self.states.values()):
                if state.snapshot_version != state.version:
                    try:
                        await self.snapshot(state)
                    except Exception:
                        log.exception("snapshot of partition %s at stop failed; its changelog stays", state.partition)
            self.states.clear()

    async def _idle_snapshots(self) -> None:
        while True:
            await asyncio.sleep(max(0.1, self._snapshot_idle / 4))
            async with self.lock:
                self.drop_unowned()
                now = self._clock()
                for state in list(self.states.values()):
                    if state.snapshot_version != state.version and now - state.changed_at >= self._snapshot_idle:
                        try:
                            await self.snapshot(state)
                        except Fenced:
                            self.drop(state.partition)
                        except Exception:
                            log.exception("idle snapshot of partition %s failed", state.partition)

    # loading -----------------------------------------------------------------------------
    def owns(self, partition: int) -> bool:
        return self.owned is None or partition in self.owned()

    def drop_unowned(self) -> None:
        if self.owned is None:
            return
        owned = self.owned()
        for partition in [p for p in self.states if p not in owned]:
            self.drop(partition)

    def drop(self, partition: int) -> None:
        if self.states.pop(partition, None) is not None:
            log.info("importance partition %s dropped from memory", partition)

    async def get(self, partition: int) -> PartitionState:
        state = self.states.get(partition)
        if state is None:
            state = await self._load(partition)
            self.states[partition] = state
        return state

    async def _load(self, partition: int) -> PartitionState:
        started = time.monotonic()
        share = self._store.total_cash / self.partitions
        loaded = await self._store.load(partition, lambda: OpicEngine(self._config, share))
        state = PartitionState(Shard(partition, loaded.engine), loaded.version, loaded.applied,
                               loaded.received_seq, loaded.sent_seq, loaded.snapshot_version,
                               len(loaded.engine.hosts), changed_at=self._clock())
        if loaded.outbox:
            await self._send([(state, loaded.outbox)])
        log.info("importance partition %s loaded: %s pages, version %s, %s transfers sent again, %.2fs",
                 partition, len(loaded.engine), loaded.version, len(loaded.outbox), time.monotonic() - started)
        return state

    # committing --------------------------------------------------------------------------
    async def deliver_locally(self, states: Sequence[PartitionState]) -> list[PartitionState]:
        """Applies at once the batch's transfers to partitions this instance owns; returns those it changed.

        The shares ``states`` collected for a partition owned here go straight into that partition's
        state in memory, when they are the next transfer the destination expects from its source, and
        the two are committed together (one transaction): their cash is announced with this batch
        instead of a topic hop and a batch later, and they never enter the outbox. Shares for other
        owners stay to be written to the outbox and sent (``commit``). Sequences advance in memory
        only: a batch that fails drops every partition it changed, which loads the committed state.
        """
        changed: dict[int, PartitionState] = {}
        try:
            for state in states:
                source, outgoing = state.partition, state.shard.outgoing
                for number in sorted(outgoing):
                    destination = await self._held(number)
                    if destination is None or destination.received_seq[source] != state.sent_seq[number]:
                        continue  # an earlier transfer to it is still on its way: this one follows it
                    shares = outgoing.pop(number)
                    state.sent_seq[number] += 1
                    destination.received_seq[source] = state.sent_seq[number]
                    destination.shard.receive(shares.keys, shares.urls, shares.cash)
                    changed[number] = destination
                    DELIVERED_LOCALLY.inc()
        except BaseException:
            for partition in changed:  # changed in memory only: the next use loads the committed state
                self.drop(partition)
            raise
        return list(changed.values())

    async def _held(self, partition: int) -> PartitionState | None:
        """The state of ``partition`` when this instance owns it (loaded if need be), else None."""
        return await self.get(partition) if self.owns(partition) else None

    async def announce(self, states: Sequence[PartitionState], now_ms: int) -> int:
        """Sends an importance update for every page announced by ``states``, grouped by host, and flushes;
        returns how many pages."""
        sent = 0
        tail = update_tail(now_ms)
        by_host: dict[str, list[bytes]] = {}
        for state in states:
            for a in state.shard.announcements():
                by_host.setdefault(a.host, []).append(
                    encode_update(a.url, a.host, a.cash, a.history, a.importance, tail))
                sent += 1
        send, topic = self._producer.send_raw, self._updates_topic
        for host, updates in by_host.items():
            key = host.encode("utf-8")
            for start in range(0, len(updates), UPDATES_PER_MESSAGE):
                send(topic, key, encode_updates(host, updates[start : start + UPDATES_PER_MESSAGE]))
        await self._producer.flush()
        return sent

    async def commit(self, states: Sequence[PartitionState], now_ms: int) -> None:
        """Makes the batch durable for ``states`` and sends the transfers it created (see module doc)."""
        commits: list[tuple[PartitionState, Commit, list[OutboxRow]]] = []
        for state in states:
            engine = state.engine
            sent_seq = list(state.sent_seq)
            rows = outbox_rows(state.partition, state.shard.take_outgoing(), sent_seq, now_ms)
            delta = encode_delta(engine, state.hosts_saved)
            commit = Commit(state.partition, state.version, engine.totals, dict(state.applied),
                            list(state.received_seq), sent_seq, delta, rows, dict(state.acknowledged))
            commits.append((state, commit, rows))
        await self._store.commit([c for _, c, _ in commits])
        now = self._clock()
        for state, commit, _ in commits:
            state.version += 1
            state.sent_seq = commit.sent_seq
            state.hosts_saved = len(state.engine.hosts)
            state.changelog_bytes += len(commit.delta)
            state.changed_at = now
            state.acknowledged.clear()
        await self._send([(state, rows) for state, _, rows in commits if rows])
        for state, _, _ in commits:
            if state.changelog_bytes >= self._snapshot_bytes:
                await self.snapshot(state)
        self._export_convergence()

    async def _send(self, batches: Sequence[tuple[PartitionState, Sequence[OutboxRow]]]) -> None:
        """Sends the transfers, waits for the broker to acknowledge them all, and remembers that."""
        if not batches:
            return
        for _, rows in batches:
            for row in rows:
                self._producer.send_raw(self._transfers_topic, row.key.encode("ascii"), row.payload)
        await self._producer.flush()
        for state, rows in batches:
            for row in rows:
                state.acknowledged[row.destination] = max(state.acknowledged.get(row.destination, 0), row.sequence)

    async def snapshot(self, state: PartitionState) -> None:
        """Writes the partition's whole state (the caller holds the lock, so nothing changes it meanwhile)."""
        engine = state.engine
        chunks = await asyncio.to_thread(encode_snapshot, engine)  # numpy and zlib work off the event loop
        published = [
            Published(engine.keys[s], url, engine.hosts[engine.host[s]], engine.effective_cash(s), engine.history[s],
                      engine.crawled(s), engine.visits[s], engine.last_visit[s])
            for s, url in engine.site_urls.items()
        ]
        await self._store.snapshot(state.partition, state.version, chunks, engine.accounted(), engine.expected(),
                                   published)
        state.snapshot_version = state.version
        state.changelog_bytes = 0

    def _export_convergence(self) -> None:
        if not self.states:
            return
        mean = sum(s.engine.totals.history for s in self.states.values()) / len(self.states)
        if mean > 0:
            CONVERGENCE.set(1.0 / (self.partitions * mean))
