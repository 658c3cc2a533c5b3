"""Simulated crawl of one site by N crawlers, each on its group of paths, and the paper's figures.

Each crawler runs a breadth-first crawl of the site graph from its seeds (the home page,
then two seeds per key path it owns). On a fetched page it follows a link only when the
target belongs to it:

- the home page belongs to every crawler (each fetches it once: the only page every
  crawler fetches);
- a page of a key path belongs to the crawler that path was assigned to;
- a page of any other path (the tail): with ``tail="hashed"`` (ours, the default) to the
  crawler numbered ``crc32(path) mod N``, the same rule the scheduler keys by; with
  ``tail="shared"`` (the paper's reading: only key paths are assigned, "even if that causes
  some repeated fetching, the share is small") to every crawler that reaches it.

Links to pages that belong to another crawler are dropped: the other crawler reaches them
from its own seeds. That is the tolerance: a page reachable only through another crawler's
pages is lost (coverage), and with a shared tail a tail page may be fetched by several
crawlers (overlap).

Figures (N pages downloaded by all crawlers, I distinct ones, U the site's pages, M the
busiest crawler's pages): overlap (N - I)/N, coverage I/U, acceleration U/M and the
composite max(A^2 (C - eps) / sqrt(max(O, delta)), 0) with eps = 0.8, delta = 0.2.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from services.scheduler.site_partition.graph import SiteGraph
from services.scheduler.site_partition.planner import PartitionPlan, PartitionPlanner, tail_group

TAIL_RULES: tuple[str, ...] = ("hashed", "shared")
EPS = 0.8
DELTA = 0.2


@dataclass(frozen=True)
class PartitionFigures:
    crawlers: int
    downloaded: int  # N
    distinct: int  # I
    pages: int  # U
    busiest: int  # M
    fetched: tuple[int, ...]  # pages fetched by each crawler
    overlap: float
    coverage: float
    acceleration: float
    composite: float


def composite(acceleration: float, coverage: float, overlap: float, eps: float = EPS, delta: float = DELTA) -> float:
    return max(acceleration**2 * (coverage - eps) / math.sqrt(max(overlap, delta)), 0.0)


def figures(crawlers: int, fetched: list[set[str]], pages: int) -> PartitionFigures:
    downloaded = sum(len(f) for f in fetched)
    distinct = len(set().union(*fetched))
    busiest = max(len(f) for f in fetched)
    overlap = (downloaded - distinct) / downloaded if downloaded else 0.0
    coverage = distinct / pages if pages else 0.0
    acceleration = pages / busiest if busiest else 0.0
    return PartitionFigures(
        crawlers=crawlers,
        downloaded=downloaded,
        distinct=distinct,
        pages=pages,
        busiest=busiest,
        fetched=tuple(len(f) for f in fetched),
        overlap=overlap,
        coverage=coverage,
        acceleration=acceleration,
        composite=composite(acceleration, coverage, overlap),
    )


def crawl(site: SiteGraph, plan: PartitionPlan, tail: str = "hashed") -> list[set[str]]:
    """The pages each crawler of ``plan`` fetches."""
    if tail not in TAIL_RULES:
        raise ValueError(f"unknown tail rule {tail!r}; known: {', '.join(TAIL_RULES)}")
    crawlers = len(plan.groups)
    owner = plan.assignment()
    fetched: list[set[str]] = []
    for me, group in enumerate(plan.groups):

        def mine(page: str, me: int = me) -> bool:
            if page == site.home:
                return True
            path = site.path[page]
            found = owner.get(path)
            if found is not None:
                return found == me
            return tail == "shared" or tail_group(path, crawlers) == me

        seen = set(group.seeds)
        queue = deque(group.seeds)
        while queue:
            page = queue.popleft()
            for target in site.out_links[page]:
                if target not in seen and mine(target):
                    seen.add(target)
                    queue.append(target)
        fetched.append(seen)
    return fetched


def evaluate(
    site: SiteGraph, crawlers: int, tail: str = "hashed", planner: PartitionPlanner | None = None
) -> PartitionFigures:
    plan = (planner or PartitionPlanner()).plan(site, crawlers)
    return figures(crawlers, crawl(site, plan, tail), site.pages)
