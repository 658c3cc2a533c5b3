"""The partition planner (seed 004): key paths, their groups, and each group's seeds.

1. Count the site's URLs per path; sort the paths by count, largest first (ties by name);
   the key paths are the first ones that together cover ``share`` (90%) of the URLs.
2. Assign each key path, in that order, to the group with the fewest URLs so far (ties: the
   lowest group number).
3. Seeds of a group: the home page, then for each of its key paths two URLs: the one with
   the most in-links (ties: lowest level, then URL), then the one with the lowest level
   (ties: most in-links, then URL) among the others.

Paths outside the key paths (the tail, 10% of the URLs) are not listed in a plan: their
group is a hash of the path (:func:`tail_group`), which needs no coordination and keeps the
plan as short as the paper wants it. The planner is pure: the evaluator runs it on a link
graph, the scheduler on the queued URLs of a large host.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.scheduler.site_partition.graph import SiteGraph

KEY_PATH_SHARE = 0.9


@dataclass(frozen=True)
class GroupPlan:
    paths: tuple[str, ...]  # its key paths
    urls: int  # URLs of those paths
    seeds: tuple[str, ...]


@dataclass(frozen=True)
class PartitionPlan:
    groups: tuple[GroupPlan, ...]
    key_paths: tuple[str, ...]
    paths: int  # all paths of the site

    def assignment(self) -> dict[str, int]:
        return {path: g for g, group in enumerate(self.groups) for path in group.paths}


def tail_group(path: str, groups: int) -> int:
    """The group of a path that is not a key path: CRC-32 of the path modulo the groups."""
    return zlib.crc32(path.encode("utf-8")) % groups


def group_of(path: str, assignment: Mapping[str, int], groups: int) -> int:
    found = assignment.get(path)
    return found if found is not None else tail_group(path, groups)


class PartitionPlanner:
    def __init__(self, share: float = KEY_PATH_SHARE) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"key path share must be in (0, 1], not {share}")
        self.share = share

    def key_paths(self, counts: Mapping[str, int]) -> list[str]:
        ordered = sorted(counts, key=lambda p: (-counts[p], p))
        need = self.share * sum(counts.values())
        chosen: list[str] = []
        covered = 0
        for path in ordered:
            if covered >= need:
                break
            chosen.append(path)
            covered += counts[path]
        return chosen

    def assign(self, counts: Mapping[str, int], groups: int) -> list[list[str]]:
        """Key paths of each group, greedily balanced by URL count."""
        if groups < 1:
            raise ValueError("at least one group")
        load = [0] * groups
        assigned: list[list[str]] = [[] for _ in range(groups)]
        for path in self.key_paths(counts):
            lightest = min(range(groups), key=lambda g: (load[g], g))
            assigned[lightest].append(path)
            load[lightest] += counts[path]
        return assigned

    def assignment(self, counts: Mapping[str, int], groups: int) -> dict[str, int]:
        """Key path -> group (what the scheduler keeps per large host)."""
        return {path: g for g, paths in enumerate(self.assign(counts, groups)) for path in paths}

    def plan(self, site: SiteGraph, groups: int) -> PartitionPlan:
        counts = site.path_counts()
        by_path: dict[str, list[str]] = {}
        for page, path in site.path.items():
            by_path.setdefault(path, []).append(page)
        plans = []
        for paths in self.assign(counts, groups):
            seeds = [site.home]
            for path in paths:
                seeds.extend(self._seeds(site, by_path[path]))
            plans.append(GroupPlan(tuple(paths), sum(counts[p] for p in paths), tuple(dict.fromkeys(seeds))))
        return PartitionPlan(tuple(plans), tuple(self.key_paths(counts)), len(counts))

    @staticmethod
    def _seeds(site: SiteGraph, pages: Sequence[str]) -> list[str]:
        linked = min(pages, key=lambda u: (-site.in_links[u], site.level[u], u))
        others = [u for u in pages if u != linked]
        if not others:
            return [linked]
        shallow = min(others, key=lambda u: (site.level[u], -site.in_links[u], u))
        return [linked, shallow]
