"""Fetch request keys of large hosts: ``host#group``, the group chosen by the URL's path (its section key).

Fetch requests are keyed by host, so one fetcher owns a host at a time. A host marked large
(``TRAWL_SCHEDULER_LARGE_HOSTS``) is split into ``groups`` path groups instead: the planner
balances its key paths over the groups by the URLs queued for each path (recomputed every
``refresh_seconds``), a path outside the key paths goes to ``crc32(path) mod groups``, and
each request is keyed ``host#group``, so up to ``groups`` fetchers work on the host at once.
Politeness stays the host's: the frontier lets a large host have one request in flight per
slot and spaces the starts of its requests by the host's gap (``FrontierStore.dispatch``).
Every other host keeps the plain host key. An operator's host policy may split more hosts,
each into its own number of groups (``set_policy_groups``); it wins over the settings.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from libs.common.url_keys import first_directory, section_key_of
from services.scheduler.site_partition.planner import PartitionPlanner, group_of

CountsOf = Callable[[str], Awaitable[Mapping[str, int]]]  # host -> queued URLs per first path segment


def fetch_key(host: str, url: str, groups: int, assignment: Mapping[str, int]) -> str:
    """``host#group`` for a host split into ``groups`` (> 1) with ``assignment`` (key path -> group)."""
    path = section_key_of(host, first_directory(url))
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
        self._policy_groups: dict[str, int] = {}

    def set_policy_groups(self, groups: Mapping[str, int]) -> None:
        """Hosts split by an operator's policy, with their group counts (replacing the last ones)."""
        changed = {h for h in set(groups) | set(self._policy_groups) if groups.get(h) != self._policy_groups.get(h)}
        for host in changed:
            self._plans.pop(host, None)
        self._policy_groups = {h: n for h, n in groups.items() if n > 1}

    def groups_of(self, host: str) -> int:
        """Path groups of ``host`` (1: not split)."""
        return self._policy_groups.get(host) or (self.groups if host in self.hosts else 1)

    def assignment(self, host: str) -> dict[str, int]:
        found = self._plans.get(host)
        return found[1] if found else {}

    async def refresh(self, counts_of: CountsOf) -> None:
        """Recomputes the plans that are older than ``refresh_seconds`` (or missing)."""
        now = self._clock()
        for host in sorted(self.hosts | set(self._policy_groups)):
            made = self._plans.get(host)
            if made is not None and now - made[0] < self._refresh:
                continue
            counts = {section_key_of(host, segment): n for segment, n in (await counts_of(host)).items()}
            self._plans[host] = (now, self._planner.assignment(counts, self.groups_of(host)))

    def key_for(self, host: str, url: str) -> str:
        groups = self.groups_of(host)
        if groups < 2:
            return host
        return fetch_key(host, url, groups, self.assignment(host))
