"""Link targets this process knows to be stored, so that a batch does not merge them again.

Most links of a crawled page point to URLs the link base already has (navigation, popular
pages). Merging such a target changes its row only when the link offers a smaller depth or
makes it followable for the first time. Stored depths only go down and announcement states
only go up (the merge takes the least and the greatest), and URL rows are never deleted, so
a remembered (depth, state) stays a safe bound whatever other writers do: when the stored
depth is known to be at most the link's and the state at least the link's, the merge would
be a no-op and is skipped. Entries are remembered only after their transaction committed.
Two generations of ``capacity / 2`` entries each bound the memory (about 100 bytes an entry).
"""

from __future__ import annotations

from collections.abc import Iterable

from services.linkbase.rows import TargetRow

Key = tuple[int, int]
Known = tuple[int | None, int]  # (stored depth or None when unknown, stored announce state)


def announce_state(target: TargetRow) -> int:
    """The state a merge asks for: 1 (pending announcement) when followable, else 0."""
    return 1 if target.followable else 0


class KnownTargets:
    def __init__(self, capacity: int = 400_000) -> None:
        self._half = max(1, capacity // 2)
        self._young: dict[Key, Known] = {}
        self._old: dict[Key, Known] = {}

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def _get(self, key: Key) -> Known | None:
        found = self._young.get(key)
        if found is None:
            found = self._old.get(key)
            if found is not None:
                self._put(key, found)
        return found

    def _put(self, key: Key, value: Known) -> None:
        self._young[key] = value
        if len(self._young) >= self._half:
            self._old, self._young = self._young, {}

    def unchanged(self, target: TargetRow) -> bool:
        """Whether merging ``target`` is known to change nothing."""
        known = self._get(target.ref.key)
        if known is None:
            return False
        depth, state = known
        deeper = target.depth is None or (depth is not None and depth <= target.depth)
        return deeper and state >= announce_state(target)

    def changing(self, targets: list[TargetRow]) -> list[TargetRow]:
        """The targets not known to be unchanged (:meth:`unchanged`), in their order, in one pass."""
        young, old = self._young, self._old
        if not young and not old:
            return targets
        in_young, in_old = young.get, old.get
        out: list[TargetRow] = []
        for target in targets:
            key = target.ref.key
            known = in_young(key)
            if known is None:
                known = in_old(key)
                if known is None:
                    out.append(target)
                    continue
                self._put(key, known)
            depth, state = known
            deeper = target.depth is None or (depth is not None and depth <= target.depth)
            if not (deeper and state >= (1 if target.followable else 0)):
                out.append(target)
        return out

    def remember(self, targets: Iterable[TargetRow]) -> None:
        """Records committed merges: each row's depth is now at most, its state at least, the link's."""
        young, half = self._young, self._half
        for target in targets:
            key = target.ref.key
            known = young.get(key)
            if known is None:
                known = self._old.get(key)
            depth, state = target.depth, 1 if target.followable else 0
            if known is not None:
                old_depth, old_state = known
                if depth is None or (old_depth is not None and old_depth < depth):
                    depth = old_depth
                if old_state > state:
                    state = old_state
            young[key] = (depth, state)
            if len(young) >= half:
                self._old, self._young = young, {}
                young = self._young
