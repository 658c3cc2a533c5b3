"""A host-structured copying-model web graph: an ordering family built on a published model other than ours.

The linkage follows the copying model of Kumar, Raghavan, Rajagopalan, Sivakumar, Tomkins
and Upfal ("Stochastic models for the Web graph", FOCS 2000): pages arrive one at a time and
each new page draws its ``d`` links either by copying the corresponding link of a random
earlier *prototype* page (probability ``copy``) or uniformly among the earlier pages. Copying
makes in-degrees follow a power law without any notion of fitness. Hosts are added on top,
as host-level studies of the web describe them (Zipf-distributed site sizes; most links stay
on their site), but none of the simulated web's own choices (``libs/simweb/webgraph.py``:
site navigation to home and section pages on every page, fitness, links drawn by the
target site's size) is used:

* Host sizes follow a Zipf law (exponent 1) over ``pages / 50`` hosts; pages of all hosts
  arrive interleaved at random, the first page of a host being its home page
  (``http://hK.example/``), the others ``http://hK.example/dI/pJ.html`` (plain pages).
* Each page gets ``d`` links; each link is cross-host with probability ``cross``, else within
  the page's host; within its scope (the host's earlier pages, or the earlier pages of other
  hosts) it copies the same-scope link of a random prototype with probability ``copy``, else
  picks a page uniformly. Cross-host links are drawn among deep pages (home pages excluded),
  so sites are entered through their deep pages and home pages are reached through them.
* Every page but a home page has a parent, a random earlier page of its host that links to
  it (a random recursive tree, so a site's home page reaches its pages), and links to its
  home page with probability ``home_link``; ``dangling`` of the pages have no links at all.

Seeds: ``seeds`` pages drawn uniformly among the pages that have links. One
``random.Random(seed)`` stream feeds every step in a fixed order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cli.eval.ordering_graph import CrawlGraph


@dataclass(frozen=True)
class CopyingConfig:
    pages: int
    seed: int
    pages_per_host: int = 50
    links: int = 7
    copy: float = 0.5
    cross: float = 0.3
    home_link: float = 0.3
    dangling: float = 0.05
    seeds: int = 10


def _zipf_sizes(rng: random.Random, pages: int, hosts: int) -> list[int]:
    """Pages per host: every host one page, the rest by a Zipf law over the hosts (exponent 1)."""
    weights = [1.0 / (k + 1) for k in range(hosts)]
    sizes = [1] * hosts
    for h in rng.choices(range(hosts), weights=weights, k=pages - hosts):
        sizes[h] += 1
    return sizes


def build_copying_graph(config: CopyingConfig) -> CrawlGraph:
    rng = random.Random(config.seed)
    hosts = max(1, config.pages // config.pages_per_host)
    sizes = _zipf_sizes(rng, config.pages, hosts)
    arrivals = [h for h, size in enumerate(sizes) for _ in range(size)]
    rng.shuffle(arrivals)
    labels: list[str] = []
    out: list[list[int]] = []
    host_of: list[int] = []
    host_pages: list[list[int]] = [[] for _ in range(hosts)]
    parents: list[list[int]] = [[] for _ in range(hosts)]  # pages of the host that have links
    deep: list[int] = []  # pages that are not home pages, in arrival order
    intra: list[list[int]] = []  # the links each page drew within its host, by slot
    cross: list[list[int]] = []  # and to other hosts
    for page, h in enumerate(arrivals):
        own = host_pages[h]
        if not own:
            labels.append(f"http://h{h}.example/")
        else:
            labels.append(f"http://h{h}.example/d{len(own) % 7}/p{len(own)}.html")
        host_of.append(h)
        targets: dict[int, None] = {}
        mine_intra: list[int] = []
        mine_cross: list[int] = []
        linked = not own or rng.random() >= config.dangling  # a home page always has links
        if own:
            out[rng.choice(parents[h])].append(page)
            if linked and rng.random() < config.home_link:
                targets[own[0]] = None
        if linked:
            parents[h].append(page)
            for slot in range(config.links):
                if rng.random() < config.cross:
                    if not deep:
                        continue
                    proto = deep[rng.randrange(len(deep))]
                    copied = cross[proto][slot] if rng.random() < config.copy and slot < len(cross[proto]) else -1
                    target = copied if copied >= 0 and host_of[copied] != h else deep[rng.randrange(len(deep))]
                    if host_of[target] == h:
                        continue
                    mine_cross.append(target)
                else:
                    if not own:
                        continue
                    proto = own[rng.randrange(len(own))]
                    copied = intra[proto][slot] if rng.random() < config.copy and slot < len(intra[proto]) else -1
                    target = copied if copied >= 0 else own[rng.randrange(len(own))]
                    mine_intra.append(target)
                targets[target] = None
        out.append(list(targets))
        intra.append(mine_intra)
        cross.append(mine_cross)
        own.append(page)
        if len(own) > 1:
            deep.append(page)
    out = [sorted(set(t) - {i}) for i, t in enumerate(out)]
    with_links = [i for i, t in enumerate(out) if t]
    seeds = rng.sample(with_links, min(config.seeds, len(with_links)))
    return CrawlGraph(labels, out, seeds)
