"""Simulated crawls of a graph under one ordering policy each, one page at a time.

Every policy sees only what a crawler would: the seeds, then the out-links of the pages it
crawled. ``omniscient`` alone also knows the true PageRank of the pages discovered so far
and always takes the highest (the practical upper bound). ``aopic`` and ``opic`` run the
importance service's own classes (``Shard`` over ``OpicEngine``, with the service's
settings for AOPIC, replays included: each crawl is followed by the replays it earns,
as the service makes them after each consumed batch) and a frontier that, like the scheduler's, orders the URLs by
``crawl_priority`` of the cash last announced for them (ties by key, as the scheduler's
``ORDER BY priority DESC, url_fp``); with ``partitions`` > 1 the URLs are split between
shards by the same hash as the service's partitions, and transfers arrive at once.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from cli.eval.ordering_graph import CrawlGraph
from cli.eval.shared_virtual import SharedVirtualPage
from libs.common.kafka.partitioner import fingerprint_partitions
from libs.common.url_keys import normalized_fingerprint
from services.importance.discovery import UNIFORM
from services.importance.engine import OpicConfig
from services.importance.settings import ImportanceSettings
from services.importance.shard import Shard
from services.scheduler.frontier.priority import crawl_priority

POLICIES: tuple[str, ...] = ("aopic", "opic", "breadth_first", "random", "omniscient", "known_pagerank", "in_links")
TOTAL_CASH = 100.0


def plain_opic_config() -> OpicConfig:
    """OPIC as the digest gives it: no virtual page (pages without out-links swallow cash), no window."""
    return OpicConfig(virtual_page=False, virtual_share=0.0, weights=UNIFORM)


@dataclass
class ImportanceCrawl:
    """The importance state of a simulated crawl: shards, keys and what was last announced."""

    graph: CrawlGraph
    config: OpicConfig
    partitions: int = 1
    seeded: bool = False
    """True: seeds get the total cash directly (plain OPIC); False: the virtual page gives it."""
    shared_virtual: str = "none"
    """How the partitions' virtual pages pay (``cli/eval/shared_virtual.py``); the service's is ``none``."""
    keys: list[int] = field(init=False)
    shards: list[Shard] = field(init=False)
    node_of: dict[int, int] = field(init=False)
    owner: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.keys = [normalized_fingerprint(label) for label in self.graph.labels]
        self.node_of = {k: i for i, k in enumerate(self.keys)}
        self.owner = fingerprint_partitions(self.keys, self.partitions)
        pool = SharedVirtualPage(self.shared_virtual)
        self.shards = [Shard(p, pool.engine(self.config, TOTAL_CASH / self.partitions)) for p in range(self.partitions)]
        seeds = self.graph.seeds
        for s in seeds:
            shard = self.shards[self.owner[s]]
            if self.seeded:
                shard.engine.endow(shard.page(self.keys[s], self.graph.labels[s]), TOTAL_CASH / len(seeds))
            else:
                shard.seed(self.keys[s], self.graph.labels[s])  # as the service learns of seeds (trawl.seeds)
        for shard in self.shards:
            shard.engine.distribute()

    def cash(self, node: int) -> float:
        engine = self.shards[self.owner[node]].engine
        slot = engine.slot(self.keys[node])
        return 0.0 if slot is None else engine.effective_cash(slot)

    def importance(self, node: int) -> float:
        engine = self.shards[self.owner[node]].engine
        slot = engine.slot(self.keys[node])
        return 0.0 if slot is None else engine.importance(slot)

    def visit(self, node: int, at: float) -> list[tuple[int, float]]:
        """Crawls ``node``; returns (node, cash) of every page announced since."""
        shard = self.shards[self.owner[node]]
        targets, keys, labels, owner = self.graph.out[node], self.keys, self.graph.labels, self.owner
        shard.visit(keys[node], labels[node], [keys[t] for t in targets], [labels[t] for t in targets],
                    [owner[t] for t in targets], at)
        shard.replay(at)  # the replays the crawl earned, as the service makes them after each batch
        for dest, out in shard.take_outgoing().items():
            self.shards[dest].receive(out.keys, out.urls, out.cash)
        announced = []
        for s in self.shards:
            announced += [(self.node_of[a.key], a.cash) for a in s.announcements()]
        return announced

    def accounted(self) -> float:
        return math.fsum(s.engine.accounted() for s in self.shards)


def importance_order(crawl: ImportanceCrawl) -> Iterator[int]:
    """Greedy: the discovered page with the highest ``crawl_priority`` of its announced cash first."""
    graph = crawl.graph
    keys = crawl.keys
    crawled = bytearray(graph.size)
    current: dict[int, float] = {}
    heap: list[tuple[float, int, int]] = []
    for s in graph.seeds:
        current[s] = crawl_priority(crawl.cash(s))
        heapq.heappush(heap, (-current[s], keys[s], s))
    step = 0
    while heap:
        priority, _, node = heapq.heappop(heap)
        if crawled[node] or current.get(node) != -priority:
            continue
        crawled[node] = 1
        step += 1
        yield node
        for other, cash in crawl.visit(node, float(step)):
            if not crawled[other]:
                value = crawl_priority(cash)
                current[other] = value
                heapq.heappush(heap, (-value, keys[other], other))


def continuous_order(crawl: ImportanceCrawl) -> Iterator[int]:
    """OPIC's own greedy policy, continuous: every fetch takes the known page with the most announced cash.

    Unlike ``importance_order`` a page crawled before is not set aside: its visit is announced
    (its cash emptied), the shares its in-links pass on afterwards are announced as they come,
    and it is fetched again once its cash is again the highest, passing on what it received
    since. Yields every fetch (a page as often as it is fetched), one second apart; ends when
    no page has announced cash left.
    """
    graph = crawl.graph
    keys = crawl.keys
    current: dict[int, float] = {}
    heap: list[tuple[float, int, int]] = []
    for s in graph.seeds:
        current[s] = crawl_priority(crawl.cash(s))
        heapq.heappush(heap, (-current[s], keys[s], s))
    step = 0
    while heap:
        priority, _, node = heapq.heappop(heap)
        if current.get(node) != -priority:
            continue
        del current[node]  # until the visit announces it again
        step += 1
        yield node
        for other, cash in crawl.visit(node, float(step)):
            value = crawl_priority(cash)
            current[other] = value
            if value > 0.0:
                heapq.heappush(heap, (-value, keys[other], other))


def revisit_pass(crawl: ImportanceCrawl, crawled: list[int], start: int) -> int:
    """Crawls every page of ``crawled`` once more, most cash first (as it stands when the pass starts).

    A model of the revisits a continuous crawl makes once every page was crawled: each one
    passes on the cash the page received since its last visit. Times go on from ``start``
    (one second per fetch, as in the first pass); returns the time after the pass.
    """
    step = start
    for node in sorted(crawled, key=lambda n: (-crawl.cash(n), crawl.keys[n])):
        step += 1
        crawl.visit(node, float(step))
    return step


def breadth_first(graph: CrawlGraph) -> Iterator[int]:
    seen = bytearray(graph.size)
    queue = list(dict.fromkeys(graph.seeds))
    for s in queue:
        seen[s] = 1
    i = 0
    while i < len(queue):
        node = queue[i]
        i += 1
        yield node
        for t in graph.out[node]:
            if not seen[t]:
                seen[t] = 1
                queue.append(t)


def random_order(graph: CrawlGraph, seed: int) -> Iterator[int]:
    rng = random.Random(seed)
    seen = bytearray(graph.size)
    pool = list(dict.fromkeys(graph.seeds))
    for s in pool:
        seen[s] = 1
    while pool:
        i = rng.randrange(len(pool))
        pool[i], pool[-1] = pool[-1], pool[i]
        node = pool.pop()
        yield node
        for t in graph.out[node]:
            if not seen[t]:
                seen[t] = 1
                pool.append(t)


def omniscient(graph: CrawlGraph, rank: np.ndarray) -> Iterator[int]:
    seen = bytearray(graph.size)
    heap = [(-float(rank[s]), s) for s in dict.fromkeys(graph.seeds)]
    heapq.heapify(heap)
    for _, s in heap:
        seen[s] = 1
    while heap:
        _, node = heapq.heappop(heap)
        yield node
        for t in graph.out[node]:
            if not seen[t]:
                seen[t] = 1
                heapq.heappush(heap, (-float(rank[t]), t))


def known_pagerank(graph: CrawlGraph, damping: float = 0.85, refresh: float = 0.05) -> Iterator[int]:
    """A reference, not a crawler's policy: PageRank over everything the crawl knows, recomputed as it grows.

    The known graph is the crawled pages with their out-links and the discovered pages (no
    out-links known: their score is spread over all known pages, as PageRank does for a page
    without links). It is recomputed whenever the crawl grew by ``refresh`` of itself (and at
    least every 50 pages early on); in between, a page crawled passes ``damping`` times its
    last computed score over its out-links, so a page discovered since gets a score at once.
    The discovered page with the highest score goes next: what ranking by link analysis
    of the crawl's own knowledge, at any cost, would do.
    """
    import scipy.sparse as sp

    index: dict[int, int] = {}
    nodes: list[int] = []
    crawled: list[int] = []
    done = bytearray(graph.size)
    score: dict[int, float] = {}

    def know(node: int) -> None:
        if node not in index:
            index[node] = len(nodes)
            nodes.append(node)

    def recompute() -> None:
        n = len(nodes)
        rows, cols, vals = [], [], []
        degree = np.zeros(n)
        for node in crawled:
            targets = graph.out[node]
            if targets:
                j = index[node]
                degree[j] = len(targets)
                for t in targets:
                    rows.append(index[t])
                    cols.append(j)
                    vals.append(1.0 / len(targets))
        matrix = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
        dangling = degree == 0
        rank = np.full(n, 1.0 / n)
        for _ in range(100):
            new = damping * (matrix @ rank) + (1.0 - damping + damping * rank[dangling].sum()) / n
            change = float(np.abs(new - rank).sum())
            rank = new
            if change < 1e-9:
                break
        for node, i in index.items():
            score[node] = float(rank[i])

    heap: list[tuple[float, int]] = []
    for s in graph.seeds:
        know(s)
        score[s] = 1.0
        heapq.heappush(heap, (-1.0, s))
    next_refresh = 1
    while heap:
        value, best = heapq.heappop(heap)
        if done[best] or -value != score[best]:
            continue
        done[best] = 1
        crawled.append(best)
        yield best
        targets = graph.out[best]
        for t in targets:
            know(t)
            if not done[t]:
                score[t] = score.get(t, 0.0) + damping * score[best] / len(targets)
                heapq.heappush(heap, (-score[t], t))
        if len(crawled) >= next_refresh:
            recompute()
            heap = [(-score[node], node) for node in nodes if not done[node]]
            heapq.heapify(heap)
            next_refresh = len(crawled) + max(1, min(50, int(refresh * len(crawled))))


def in_links(graph: CrawlGraph) -> Iterator[int]:
    """A reference: the discovered page with the most in-links from crawled pages first (backlink count)."""
    count: dict[int, int] = {}
    done = bytearray(graph.size)
    heap: list[tuple[int, int]] = []
    for s in dict.fromkeys(graph.seeds):
        count[s] = 1
        heapq.heappush(heap, (-1, s))
    while heap:
        value, node = heapq.heappop(heap)
        if done[node] or -value != count[node]:
            continue
        done[node] = 1
        yield node
        for t in graph.out[node]:
            if not done[t]:
                count[t] = count.get(t, 0) + 1
                heapq.heappush(heap, (-count[t], t))


def policy_order(name: str, graph: CrawlGraph, rank: np.ndarray, settings: ImportanceSettings, partitions: int,
                 seed: int, shared_virtual: str = "none") -> tuple[Iterator[int], ImportanceCrawl | None]:
    """The crawl order of policy ``name`` and, for the OPIC family, its importance state (AOPIC's partitions'
    virtual pages paying as ``shared_virtual`` says)."""
    if name == "aopic":
        crawl = ImportanceCrawl(graph, settings.opic_config(partitions), partitions, shared_virtual=shared_virtual)
        return importance_order(crawl), crawl
    if name == "opic":
        crawl = ImportanceCrawl(graph, plain_opic_config(), partitions, seeded=True)
        return importance_order(crawl), crawl
    if name == "breadth_first":
        return breadth_first(graph), None
    if name == "random":
        return random_order(graph, seed), None
    if name == "omniscient":
        return omniscient(graph, rank), None
    if name == "known_pagerank":
        return known_pagerank(graph), None
    if name == "in_links":
        return in_links(graph), None
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
