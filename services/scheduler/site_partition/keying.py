"""Fetch request keys of large hosts: ``host#group``, the group chosen by the URL's path.

Fetch requests are keyed by host, so one fetcher owns a host at a time. A host marked large
(``TRAWL_SCHEDULER_LARGE_HOSTS``) is split into ``groups`` path groups instead: the planner
balances its key paths over the groups by the URLs queued for each path (recomputed every
``refresh_seconds``), a path outside the key paths goes to ``crc32(path) mod groups``, and
each request is keyed ``host#group``, so up to ``groups`` fetchers work on the host at once.
Politeness stays the host's: the frontier lets a large host have one request in flight per
slot and spaces the starts of its requests by the host's gap (``FrontierStore.dispatch``).
Every other host keeps the plain host key.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from services.scheduler.site_partition.paths import first_segment, path_key
from services.scheduler.site_partition.planner import PartitionPlanner, group_of

CountsOf = Callable[[str], Awaitable[Mapping[str, int]]]  # host -> queued URLs per first path segment


def fetch_key(host: str, url: str, groups: int, assignment: Mapping[str, int]) -> str:
    """``host#group`` for a host split into ``groups`` (> 1) with ``assignment`` (key path -> group)."""
    path = path_key(host, first_segment(url))
    return f"{host}#{group_of(path, assignment, groups)}"


class LargeHostKeys:
    def __init__(
        self,
        hosts: Sequence[str],
        groups: int,
        refresh_seconds: float,
        planner: PartitionPlanner | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hosts = frozenset(hosts) if groups > 1 else frozenset()
        self.groups = groups
        self._refresh = refresh_seconds
        self._planner = planner or PartitionPlanner()
        self._clock = clock
        self._plans: dict[str, tuple[float, dict[str, int]]] = {}

    def assignment(self, host: str) -> dict[str, int]:
        found = self._plans.get(host)
        return found[1] if found else {}

    async def refresh(self, counts_of: CountsOf) -> None:
        """Recomputes the plans that are older than ``refresh_seconds`` (or missing)."""
        now = self._clock()
        for host in sorted(self.hosts):
            made = self._plans.get(host)
            if made is not None and now - made[0] < self._refresh:
                continue
            counts = {path_key(host, segment): n for segment, n in (await counts_of(host)).items()}
            self._plans[host] = (now, self._planner.assignment(counts, self.groups))

    def key_for(self, host: str, url: str) -> str:
        if host not in self.hosts:
            return host
        return fetch_key(host, url, self.groups, self.assignment(host))
