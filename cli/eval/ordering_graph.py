"""The graph the ordering evaluator crawls: read from files or generated, and its true PageRank.

A graph file has one edge per line, ``source target`` (URLs or integers, separated by
white space; blank lines and lines starting with ``#`` are skipped); a seeds file has one
node per line. Nodes become dense ids in order of first appearance; repeated edges and
self-links count once. ``generate`` draws a web-like graph with the simulated web's
generator (``libs.simweb.webgraph``) and seeds it with the home pages of randomly chosen
hosts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from libs.simweb.webgraph import WebGraph, build_web_graph, web_like_config

DAMPING = 0.85


@dataclass
class CrawlGraph:
    labels: list[str]
    out: list[list[int]]
    seeds: list[int]

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def edges(self) -> int:
        return sum(len(targets) for targets in self.out)

    def reachable(self) -> int:
        """Nodes reachable from the seeds: what any policy can crawl at most."""
        seen = bytearray(self.size)
        stack = list(self.seeds)
        for s in stack:
            seen[s] = 1
        while stack:
            for t in self.out[stack.pop()]:
                if not seen[t]:
                    seen[t] = 1
                    stack.append(t)
        return sum(seen)


class GraphFormatError(ValueError):
    pass


def read_graph(graph_path: Path, seeds_path: Path) -> CrawlGraph:
    ids: dict[str, int] = {}
    labels: list[str] = []
    edges: list[set[int]] = []

    def node(label: str) -> int:
        i = ids.get(label)
        if i is None:
            i = ids[label] = len(labels)
            labels.append(label)
            edges.append(set())
        return i

    with graph_path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2:
                raise GraphFormatError(f"{graph_path}:{number}: expected 'source target', got {line.strip()!r}")
            source, target = node(parts[0]), node(parts[1])
            if source != target:
                edges[source].add(target)
    seeds: list[int] = []
    for number, line in enumerate(seeds_path.read_text(encoding="utf-8").splitlines(), start=1):
        label = line.strip()
        if not label or label.startswith("#"):
            continue
        if label not in ids:
            raise GraphFormatError(f"{seeds_path}:{number}: seed {label!r} is not a node of the graph")
        seeds.append(ids[label])
    if not seeds:
        raise GraphFormatError(f"{seeds_path}: no seeds")
    return CrawlGraph(labels, [sorted(e) for e in edges], list(dict.fromkeys(seeds)))


def generate(pages: int, seed: int, seed_hosts: int) -> tuple[CrawlGraph, WebGraph]:
    """A web-like graph of ``pages`` pages (generator seed ``seed``), seeded with ``seed_hosts`` home pages."""
    web = build_web_graph(web_like_config(pages, seed))
    rng = random.Random(seed)
    seeds = rng.sample(web.home_pages, min(seed_hosts, len(web.home_pages)))
    return CrawlGraph(web.urls, web.out_links, seeds), web


def pagerank(graph: CrawlGraph, damping: float = DAMPING, tolerance: float = 1e-12) -> np.ndarray:
    """PageRank by power iteration; a page without out-links spreads its score over all pages."""
    n = graph.size
    degree = np.fromiter((len(t) for t in graph.out), dtype=np.float64, count=n)
    sources = np.repeat(np.arange(n), degree.astype(np.int64))
    targets = np.fromiter((t for ts in graph.out for t in ts), dtype=np.int64, count=int(degree.sum()))
    weights = 1.0 / degree[sources]
    matrix = sp.csr_matrix((weights, (targets, sources)), shape=(n, n))
    dangling = degree == 0
    rank = np.full(n, 1.0 / n)
    for _ in range(1000):
        new = damping * (matrix @ rank) + (1.0 - damping + damping * rank[dangling].sum()) / n
        change = float(np.abs(new - rank).sum())
        rank = new
        if change < tolerance:
            break
    result: np.ndarray = rank / rank.sum()
    return result
