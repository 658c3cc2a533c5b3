"""A site's internal link graph, as the partition evaluator reads it.

The file has one link per line, ``source target`` (two URLs separated by white space);
blank lines and lines starting with ``#`` are skipped. The site's pages are those reachable
from its home page: what one crawler doing a breadth-first crawl from the home page fetches
(the paper's U). A page's level is its distance from the home page in links.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from libs.common.url_keys import section_key


class GraphFileError(ValueError):
    """A link graph file that cannot be read."""


@dataclass(frozen=True)
class SiteGraph:
    home: str
    out_links: Mapping[str, tuple[str, ...]]  # page -> its links to pages of the site, in file order
    level: Mapping[str, int]  # page -> links from the home page
    in_links: Mapping[str, int]  # page -> links to it from pages of the site
    path: Mapping[str, str]  # page -> its path: libs.common.url_keys.section_key

    @property
    def pages(self) -> int:
        return len(self.level)

    @property
    def links(self) -> int:
        return sum(len(v) for v in self.out_links.values())

    def path_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in self.path.values():
            counts[p] = counts.get(p, 0) + 1
        return counts

    def same_path_link_share(self) -> float:
        """Mean over pages with links of the share of their links to their own path (paper: 74.36%)."""
        shares = [
            sum(self.path[t] == self.path[page] for t in targets) / len(targets)
            for page, targets in self.out_links.items()
            if targets
        ]
        return sum(shares) / len(shares) if shares else 0.0


def build_graph(edges: Iterable[tuple[str, str]], home: str) -> SiteGraph:
    raw: dict[str, list[str]] = {}
    for source, target in edges:
        if source != target:
            raw.setdefault(source, []).append(target)
    if home not in raw and not any(home in t for t in raw.values()):
        raise GraphFileError(f"the home page {home} is not in the graph")
    level = {home: 0}
    queue = deque([home])
    while queue:
        page = queue.popleft()
        for target in raw.get(page, ()):
            if target not in level:
                level[target] = level[page] + 1
                queue.append(target)
    out: dict[str, tuple[str, ...]] = {}
    in_links = dict.fromkeys(level, 0)
    for page in level:
        targets = tuple(dict.fromkeys(raw.get(page, ())))  # a repeated link is one link
        out[page] = targets
        for target in targets:
            in_links[target] += 1
    return SiteGraph(home, out, level, in_links, {page: section_key(page) for page in level})


def parse_edges(lines: Iterable[str]) -> list[tuple[str, str]]:
    edges = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) != 2:
            raise GraphFileError(f"line {number}: expected 'source target', got {len(parts)} fields")
        edges.append((parts[0], parts[1]))
    return edges


def load_graph(path: Path, home: str) -> SiteGraph:
    with path.open(encoding="utf-8") as f:
        return build_graph(parse_edges(f), home)
