"""The importance state in PostgreSQL: per partition a row, a snapshot, a changelog and an outbox.

A partition's pages live in the memory of the instance that owns it (``OpicEngine``).
Each consumed batch is made durable by one transaction that, for every partition it
touched, checks and bumps the partition's version (fencing: an instance holding a stale
copy cannot commit), appends the delta of the pages that changed, stores the engine's
scalars, the input offsets and transfer sequences applied, and writes the cash transfers
the batch created into the outbox. Loading reads the snapshot, applies the deltas after
it and returns what is left in the outbox, to be sent again. A snapshot replaces the
changelog when it grows large or the partition goes idle; it also records an exact audit
of the cash the partition holds. Snapshots, deltas and outbox payloads are stored
zlib-compressed (level 1: URLs and sparse columns shrink six to eight times for a few
milliseconds of this process's time, and the database writes that much less).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb

from libs.common.db.pool import Database
from libs.common.errors import RetryableError
from services.importance.engine import OpicEngine, Totals
from services.importance.state_codec import apply_rows, finish_load, totals_from

LEVEL = 1

CONSERVATION_SQL = (
    "SELECT CASE WHEN bool_and(audited_version = version) THEN sum(audited_cash)"
    " + sum((totals->>'sent')::float8) - sum((totals->>'received')::float8) END,"
    " sum((totals->>'initial')::float8) FROM importance.partitions"
)
"""(cash accounted for, total cash) once every partition's audit is current (it is after an idle
snapshot): the partitions' exact sums plus the transfers in flight (sent minus received)."""


class Fenced(RetryableError):
    """Another instance committed this partition since it was loaded here: the copy is stale."""


@dataclass(frozen=True)
class OutboxRow:
    destination: int
    sequence: int
    key: str
    cash: float
    payload: bytes


class Published(NamedTuple):
    """A page's state as ``importance.pages`` shows it."""

    url_fp: int
    url: str
    host: str
    cash: float
    history: float
    crawled: bool
    visits: int
    last_visit: float


@dataclass
class Loaded:
    engine: OpicEngine
    version: int
    applied: dict[str, int]
    received_seq: list[int]
    sent_seq: list[int]
    snapshot_version: int
    outbox: list[OutboxRow]


@dataclass
class Commit:
    partition: int
    version: int
    """The version the state was loaded at or last committed (the new one is version + 1)."""
    totals: Totals
    applied: dict[str, int]
    received_seq: list[int]
    sent_seq: list[int]
    delta: bytes
    outbox: list[OutboxRow] = field(default_factory=list)
    acknowledged: dict[int, int] = field(default_factory=dict)
    """Destination -> last sequence the broker acknowledged. Not what leaves the outbox: a transfer leaves it when
    its destination applies it (an acknowledged one can still be lost with a broker that loses its data)."""


def _totals_json(totals: Totals) -> Jsonb:
    return Jsonb({k: getattr(totals, k) for k in totals.__dataclass_fields__})


class CashStore:
    def __init__(self, db: Database, partitions: int, total_cash: float) -> None:
        self._db = db
        self.partitions = partitions
        self.total_cash = total_cash

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def ensure_partitions(self) -> None:
        """Creates the rows of every partition, each with its share of the cash in its virtual page."""
        share = self.total_cash / self.partitions
        empty = [0] * self.partitions
        async with self._db.transaction() as conn:
            for p in range(self.partitions):
                totals = Totals(initial=share, virtual=share)
                await conn.execute(
                    "INSERT INTO importance.partitions (partition, partitions, totals, received_seq, sent_seq,"
                    " audited_cash, audited_expected, audited_version) VALUES (%s, %s, %s, %s, %s, %s, %s, 0)"
                    " ON CONFLICT (partition) DO NOTHING",
                    (p, self.partitions, _totals_json(totals), empty, empty, share, share),
                )
            cur = await conn.execute("SELECT DISTINCT partitions FROM importance.partitions")
            counts = {int(r[0]) for r in await cur.fetchall()}
        if counts != {self.partitions}:
            raise RuntimeError(
                f"the importance state was split for {sorted(counts)} partitions, the topics have {self.partitions}:"
                " repartitioning the state is not supported"
            )

    async def load(self, partition: int, new_engine: Callable[[], OpicEngine]) -> Loaded:
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "SELECT version, totals, applied, received_seq, sent_seq, snapshot_version"
                " FROM importance.partitions WHERE partition = %s",
                (partition,),
            )
            row = await cur.fetchone()
            if row is None:
                raise RuntimeError(f"importance partition {partition} has no state row")
            version, totals, applied, received, sent, snapshot_version = row
            cur = await conn.execute(
                "SELECT state FROM importance.snapshots WHERE partition = %s AND version = %s ORDER BY chunk",
                (partition, snapshot_version),
            )
            chunks = [zlib.decompress(r[0]) for r in await cur.fetchall()]
            cur = await conn.execute(
                "SELECT version, delta FROM importance.changelog WHERE partition = %s AND version > %s"
                " ORDER BY version",
                (partition, snapshot_version),
            )
            deltas = await cur.fetchall()
            cur = await conn.execute(
                "SELECT destination, sequence, key, cash, payload FROM importance.outbox WHERE partition = %s"
                " ORDER BY destination, sequence",
                (partition,),
            )
            outbox = [OutboxRow(int(d), int(s), str(k), float(c), zlib.decompress(p))
                      for d, s, k, c, p in await cur.fetchall()]
        if snapshot_version and not chunks:
            raise RuntimeError(f"importance partition {partition}: snapshot {snapshot_version} is missing")
        expected = list(range(int(snapshot_version) + 1, int(version) + 1))
        if [int(v) for v, _ in deltas] != expected:
            raise RuntimeError(f"importance partition {partition}: changelog does not lead to version {version}")
        engine = new_engine()
        for chunk in chunks:
            apply_rows(engine, chunk)
        for _, delta in deltas:
            apply_rows(engine, zlib.decompress(delta))
        engine.totals = totals_from(totals)
        finish_load(engine)
        return Loaded(engine, int(version), {str(k): int(v) for k, v in dict(applied).items()},
                      [int(x) for x in received], [int(x) for x in sent], int(snapshot_version), outbox)

    async def commit(self, commits: Sequence[Commit]) -> None:
        """One transaction for all partitions of a batch; raises Fenced if any copy is stale."""
        async with self._db.transaction() as conn:
            for c in sorted(commits, key=lambda c: c.partition):
                cur = await conn.execute(
                    "UPDATE importance.partitions SET version = version + 1, totals = %s, applied = %s,"
                    " received_seq = %s, sent_seq = %s, updated_at = now() WHERE partition = %s AND version = %s",
                    (_totals_json(c.totals), Jsonb(c.applied), c.received_seq, c.sent_seq, c.partition, c.version),
                )
                if cur.rowcount != 1:
                    raise Fenced(f"importance partition {c.partition} was committed elsewhere since {c.version}")
                await conn.execute(
                    "INSERT INTO importance.changelog (partition, version, delta) VALUES (%s, %s, %s)",
                    (c.partition, c.version + 1, zlib.compress(c.delta, LEVEL)),
                )
                if c.outbox:  # payloads as a binary array (%b): escaping a bytea array as text is slow
                    rows = c.outbox
                    await conn.execute(
                        "INSERT INTO importance.outbox (partition, destination, sequence, key, cash, payload)"
                        " SELECT %s, * FROM unnest(%s::int[], %s::bigint[], %s::text[], %s::float8[], %b::bytea[])",
                        (c.partition, [r.destination for r in rows], [r.sequence for r in rows],
                         [r.key for r in rows], [r.cash for r in rows],
                         [zlib.compress(r.payload, LEVEL) for r in rows]),
                    )
                # A transfer leaves its sender's outbox when this, its destination, applies it, not when the
                # broker acknowledged it: a broker that loses its data (restarted empty) takes transfers it
                # acknowledged, and the sender's next load sends again what is left.
                await conn.execute(
                    "DELETE FROM importance.outbox o"
                    " WHERE o.destination = %s AND o.sequence <= (%s::bigint[])[o.partition + 1]",
                    (c.partition, c.received_seq),
                )

    async def snapshot(self, partition: int, version: int, chunks: Sequence[bytes], audited: float,
                       expected: float, published: Sequence[Published] = ()) -> None:
        """Replaces the partition's snapshot and changelog with ``chunks`` (its state at ``version``).

        ``published`` (home and index pages) is written to ``importance.pages`` for people to read.
        """
        packed = await asyncio.to_thread(lambda: [zlib.compress(chunk, LEVEL) for chunk in chunks])
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "SELECT version FROM importance.partitions WHERE partition = %s FOR UPDATE", (partition,)
            )
            row = await cur.fetchone()
            if row is None or int(row[0]) != version:
                raise Fenced(f"importance partition {partition} moved past version {version}")
            await conn.execute("DELETE FROM importance.snapshots WHERE partition = %s", (partition,))
            for n, chunk in enumerate(packed):
                await conn.execute(
                    "INSERT INTO importance.snapshots (partition, version, chunk, state) VALUES (%s, %s, %s, %s)",
                    (partition, version, n, chunk),
                )
            await conn.execute(
                "DELETE FROM importance.changelog WHERE partition = %s AND version <= %s", (partition, version)
            )
            await conn.execute(
                "UPDATE importance.partitions SET snapshot_version = %s, audited_cash = %s, audited_expected = %s,"
                " audited_version = %s WHERE partition = %s",
                (version, audited, expected, version, partition),
            )
            if published:
                rows = sorted(published)
                await conn.execute(
                    "INSERT INTO importance.pages AS p (url_fp, url, host, cash, history, crawled, visits, last_visit)"
                    " SELECT fp, url, host, cash, history, crawled, visits,"
                    "   CASE WHEN visited > 0 THEN to_timestamp(visited) END"
                    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::float8[], %s::bool[],"
                    "   %s::int[], %s::float8[]) AS t(fp, url, host, cash, history, crawled, visits, visited)"
                    " ON CONFLICT (url_fp) DO UPDATE SET cash = excluded.cash, history = excluded.history,"
                    "   crawled = excluded.crawled, visits = excluded.visits, last_visit = excluded.last_visit",
                    tuple(list(column) for column in zip(*rows, strict=True)),
                )

    async def conservation(self) -> tuple[float | None, float]:
        """(cash accounted for, total cash): see ``CONSERVATION_SQL``."""
        async with self._db.connection() as conn:
            cur = await conn.execute(CONSERVATION_SQL)
            row = await cur.fetchone()
            assert row is not None
            return (None if row[0] is None else float(row[0])), float(row[1])

    async def rows(self) -> list[dict[str, Any]]:
        """Every partition row, for tests and operators."""
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT partition, version, totals, applied, received_seq, sent_seq, snapshot_version,"
                " audited_cash, audited_expected, audited_version FROM importance.partitions ORDER BY partition"
            )
            assert cur.description is not None
            names = [c.name for c in cur.description]
            return [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]

