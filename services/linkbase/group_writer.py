"""A consumed batch's chunks written by host group: one connection per group, the groups side by side.

The link base is hash-partitioned by host and every row's primary key starts with its host's
id. A chunk is split by host group (:meth:`~services.linkbase.batch.LinkbaseBatch.split`),
and each group writes its part in its own transaction on its own connection, concurrently,
so that PostgreSQL works on more than one core (and one group computes while the other
waits for its commit to be flushed). A group's transactions write only rows of its own hosts,
so they never wait for a lock another group holds: the groups cannot deadlock each other.

The one row a part cannot write itself is a link target on another group's host (a page
in one group linking to a URL in another). Each part returns its targets, computed from its
own pages' depths; they are combined as one writer would compute them for the whole chunk
(:func:`~services.linkbase.rows.combine_targets`) and each is merged by its own host's group
at the start of that group's next transaction (chunk k's targets in transaction k + 1, the
last chunk's in :meth:`GroupWriter.flush`). Every URL row thus sees the merges of chunk after
chunk in the order one writer applies them, and the result is the same. Every statement is
idempotent, so a batch that fails half-way is redelivered whole; the consumer commits its
offsets only after the flush.

One difference with a single writer: a part checks its new targets against the per-host URL
counts committed so far, so with n groups a host may exceed its budget by up to n chunks'
worth of new URLs instead of one (:mod:`services.linkbase.host_budget` allows overshoot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from services.linkbase.batch import LinkbaseBatch
from services.linkbase.rows import TargetRow, combine_targets, host_group
from services.linkbase.store import LinkStore, Written


async def _all(steps: list[Awaitable[Written]]) -> list[Written]:
    """Runs the steps concurrently; waits for every one before raising the first failure."""
    results = await asyncio.gather(*steps, return_exceptions=True)
    written: list[Written] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        written.append(result)
    return written


class GroupWriter:
    """Writes the chunks of one consumed batch in ``groups`` concurrent host groups; :meth:`flush` ends it."""

    def __init__(self, store: LinkStore, groups: int) -> None:
        self._store = store
        self._groups = max(1, groups)
        self._pending: list[list[TargetRow]] = [[] for _ in range(self._groups)]

    async def write(self, batch: LinkbaseBatch) -> None:
        """Writes one chunk (and the targets the previous chunk left): one transaction per group."""
        parts = batch.split(self._groups)
        pending, self._pending = self._pending, [[] for _ in range(self._groups)]
        written = await _all([self._store.write_deferred(part, earlier)
                              for part, earlier in zip(parts, pending, strict=True) if earlier or not part.empty])
        # Per group, the targets each part found on its hosts; only a group that several parts
        # link into needs combining (in a crawl, most links stay on their page's host).
        routed: list[list[list[TargetRow]]] = [[[] for _ in written] for _ in range(self._groups)]
        for number, part_written in enumerate(written):
            for target in part_written.targets:
                routed[host_group(target.ref.host_id, self._groups)][number].append(target)
        self._pending = [combine_targets(parts) for parts in routed]

    async def flush(self) -> None:
        """Merges the targets the last chunk left, each group in its own transaction."""
        pending, self._pending = self._pending, [[] for _ in range(self._groups)]
        await _all([self._store.write_deferred(LinkbaseBatch(), earlier) for earlier in pending if earlier])
