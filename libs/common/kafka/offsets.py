"""Which offsets of a partition may be committed when records finish out of order."""

from __future__ import annotations

from collections import deque


class PartitionOffsets:
    """Tracks records of one partition; the commit position is the first offset not yet done.

    Offsets are added in increasing order (as Kafka delivers them) and may finish in any
    order; everything before the oldest unfinished record is safe to commit.
    """

    def __init__(self) -> None:
        self._pending: deque[int] = deque()
        self._done: set[int] = set()
        self._next: int | None = None  # commit position when nothing is pending

    def add(self, offset: int) -> None:
        self._pending.append(offset)

    def done(self, offset: int) -> None:
        self._done.add(offset)
        while self._pending and self._pending[0] in self._done:
            finished = self._pending.popleft()
            self._done.discard(finished)
            self._next = finished + 1

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def commit_position(self) -> int | None:
        """The offset to commit (next to consume), or None if nothing finished yet."""
        return self._next
