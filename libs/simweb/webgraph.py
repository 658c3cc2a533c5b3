"""The simulated web as a bare link graph, for evaluations on webs too large to serve.

``build_web_graph(config)`` draws the same kind of web as ``build_web`` (host names and
Zipf page budgets from :func:`~libs.simweb.hosts.plan_hosts`, Pareto page fitness,
article links drawn by fitness, a share of them to other sites) but keeps only URLs and
edges, so 100,000 pages take seconds and little memory. Its shape, and why:

* Every host has a home page and section pages (``/section-N/``, one per 40 pages, at
  most 12), and every page carries the site's navigation (home and every section), as
  real sites do: home and section pages of large sites gather most internal in-links.
* Reachability: within a section, every article gets a *parent*, an earlier page of the
  section (the section page or an article that has links), chosen uniformly (a random
  recursive tree rooted at the section page), so the home page of a host reaches all of
  its pages; each section page also lists its newest articles.
* Cross-host links by popularity: an article's external links go to pages of other
  registered domains drawn in proportion to their fitness, with home pages five times
  and section pages twice as attractive, so large sites, whose total fitness is large,
  receive most of them.
* ``no_out_links_ratio`` of the articles have no links at all (not even navigation).

One ``random.Random(config.seed)`` stream feeds every step in a fixed order, so a config
always yields the same graph.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

from libs.simweb.config import SimWebConfig
from libs.simweb.hosts import plan_hosts, registered_domain

SECTION_PAGES_EVERY = 40
MAX_SECTIONS = 12
SECTION_LISTING = 20
FEATURED_PER_HOME = 3
HOME_ATTRACTION = 5.0
SECTION_ATTRACTION = 2.0


@dataclass(frozen=True)
class WebGraph:
    """Pages as dense ids: ``urls[i]`` is page i, ``out_links[i]`` its distinct targets."""

    urls: list[str]
    out_links: list[list[int]]
    home_pages: list[int]
    """The home page of every host, in host order."""

    @property
    def edges(self) -> int:
        return sum(len(targets) for targets in self.out_links)

    def edge_lines(self) -> Iterable[str]:
        """``source target`` lines (URLs), the evaluators' graph file format."""
        for source, targets in enumerate(self.out_links):
            url = self.urls[source]
            for target in targets:
                yield f"{url} {self.urls[target]}\n"


def web_like_config(pages: int, seed: int) -> SimWebConfig:
    """The config of the web-like graphs the ordering evaluation uses: one host per 100 pages."""
    return SimWebConfig(seed=seed, pages=pages, hosts=max(1, pages // 100), no_out_links_ratio=0.03,
                        hub_host_ratio=0.0)


class _Host:
    def __init__(self, name: str, first: int, count: int) -> None:
        self.name = name
        self.domain = registered_domain(name)
        self.home = first
        sections = max(1, min(MAX_SECTIONS, 1 + count // SECTION_PAGES_EVERY))
        self.sections = list(range(first + 1, first + 1 + min(sections, count - 1)))
        self.articles = list(range(first + 1 + len(self.sections), first + count))


def build_web_graph(config: SimWebConfig) -> WebGraph:
    """The web ``config`` describes, as a link graph (hub and robots settings do not apply)."""
    rng = random.Random(config.seed)
    plans = plan_hosts(replace(config, hub_host_ratio=0.0), rng)
    hosts: list[_Host] = []
    urls: list[str] = []
    for plan in plans:
        host = _Host(plan.spec.name, len(urls), plan.page_count)
        hosts.append(host)
        urls.append(f"http://{host.name}/")
        urls += [f"http://{host.name}/section-{n + 1}/" for n in range(len(host.sections))]
        urls += [""] * len(host.articles)
    n = len(urls)
    fitness = [rng.paretovariate(config.page_fitness_exponent) for _ in range(n)]
    out: list[list[int]] = [[] for _ in range(n)]
    dangling = [False] * n
    section_of = [-1] * n
    for host in hosts:
        fitness[host.home] *= HOME_ATTRACTION
        for s in host.sections:
            fitness[s] *= SECTION_ATTRACTION
        for k, a in enumerate(host.articles, start=1):
            section = host.sections[rng.randrange(len(host.sections))]
            section_of[a] = section
            urls[a] = f"{urls[section]}page-{k}.html"
            dangling[a] = rng.random() < config.no_out_links_ratio
    _wire_sites(hosts, out, dangling, section_of, fitness, rng)
    _wire_articles(config, hosts, out, dangling, fitness, rng)
    for i, targets in enumerate(out):
        distinct = [t for t in dict.fromkeys(targets) if t != i]
        rng.shuffle(distinct)
        out[i] = distinct
    return WebGraph(urls, out, [h.home for h in hosts])


def _wire_sites(hosts: list[_Host], out: list[list[int]], dangling: list[bool], section_of: list[int],
                fitness: list[float], rng: random.Random) -> None:
    """Navigation, section listings and the parent trees that make every page reachable."""
    for host in hosts:
        nav = [host.home, *host.sections]
        members: dict[int, list[int]] = {}
        for a in host.articles:
            members.setdefault(section_of[a], []).append(a)
        for page in nav:
            out[page] = [p for p in nav if p != page]
        for section, articles in members.items():
            parents = [section]
            for a in articles:
                out[rng.choice(parents)].append(a)
                if not dangling[a]:
                    parents.append(a)
                    out[a] += nav
            out[section] += articles[-SECTION_LISTING:]
        featured = sorted((a for a in host.articles if not dangling[a]), key=lambda a: (-fitness[a], a))
        out[host.home] += featured[:FEATURED_PER_HOME]


def _wire_articles(config: SimWebConfig, hosts: list[_Host], out: list[list[int]], dangling: list[bool],
                   fitness: list[float], rng: random.Random) -> None:
    """Article links drawn by fitness: inside the site, or (external share) to other domains."""
    global_cum = list(accumulate(fitness))
    by_domain: dict[str, list[int]] = {}
    for host in hosts:
        by_domain.setdefault(host.domain, []).extend([host.home, *host.sections, *host.articles])
    local = {d: (ids, list(accumulate(fitness[i] for i in ids))) for d, ids in by_domain.items()}
    domain_of = {}
    for host in hosts:
        for page in (host.home, *host.sections, *host.articles):
            domain_of[page] = host.domain
    for host in hosts:
        ids, cum = local[host.domain]
        for page in (host.home, *host.articles):
            if dangling[page]:
                continue
            seen = set(out[page])
            seen.add(page)
            wanted = int(rng.expovariate(1.0 / config.mean_out_links) + 0.5) if config.mean_out_links else 0
            for _ in range(min(config.max_out_links, wanted)):
                if rng.random() < config.external_link_ratio:
                    target = -1
                    for _attempt in range(12):
                        pick = bisect_left(global_cum, rng.random() * global_cum[-1])
                        if domain_of[pick] != host.domain:
                            target = pick
                            break
                else:
                    target = ids[bisect_left(cum, rng.random() * cum[-1])]
                if target >= 0 and target not in seen:
                    seen.add(target)
                    out[page].append(target)


def write_graph(graph: WebGraph, graph_path: Path, seeds_path: Path, seeds: Iterable[int]) -> None:
    """Writes the graph (one ``source target`` line per edge) and the seeds (one URL per line)."""
    with graph_path.open("w", encoding="utf-8") as fh:
        fh.writelines(graph.edge_lines())
    seeds_path.write_text("".join(f"{graph.urls[s]}\n" for s in seeds), encoding="utf-8")
