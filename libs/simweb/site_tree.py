"""Simulated webs of structured sites: a home page, levels of sections, and articles under them.

Where :func:`~libs.simweb.build.build_web` draws a scale-free graph, this builds sites as
publishers lay them out, which is what politeness-bound crawling is judged on: each host is a
tree (home page -> sections -> subsections ... -> articles) with navigation on every page (a
menu of the top sections, a breadcrumb, a "most read" sidebar, a footer), section pages that
list their subsections and articles, and articles that link to a few siblings and, for a share
of them, to other sites' articles or home pages. Pages weigh 20-100 KB, as served pages do
(inline ``<style>`` and ``<script>``, boilerplate, the article); a share of hosts state a
``Crawl-delay`` in robots.txt and a share ``Disallow: /``.

The result is a :class:`TreeWeb`, a :class:`~libs.simweb.web.SimWeb` whose pages render with
:mod:`libs.simweb.site_tree_render`, so the existing server, request log and checks serve and
judge it unchanged. ``build_tree_web(config)`` is a pure function of its
:class:`TreeWebConfig`; :func:`tree_family` names the webs the politeness benchmark crawls.
"""

from __future__ import annotations

import random
import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from libs.simweb import robots, words
from libs.simweb import web as simweb_pages
from libs.simweb.config import SimWebConfig
from libs.simweb.model import HostSpec, Page, PageRole, Placement, RobotsGroup, RobotsVariant, SimLink
from libs.simweb.site_tree_render import Boilerplate, PageBlocks, boilerplate, render_tree_page
from libs.simweb.web import SimWeb
from libs.simweb.words import TextSpec

ARTICLES_PER_SECTION = 30
"""Target of articles listed per section page: the tree branches until sections hold about this many."""
LEAF_CAPACITY = 40
"""Most articles a section page lists; those a site's leaves cannot hold go to its inner sections."""
MENU_SIZE = 12
POPULAR = 5
"""Articles every page of a site links to in its "most read" sidebar."""
SIBLINGS = 3


@dataclass(frozen=True)
class SiteGroup:
    """``count`` hosts named ``{label}-NNN.test`` of one shape."""

    label: str
    count: int
    pages: tuple[int, int]
    """Pages per host (home, sections and articles), drawn uniformly from this range."""
    section_levels: int = 1
    """Levels of sections between the home page and the articles; 0: a one-page host."""

    @property
    def min_pages(self) -> int:
        return 1 if self.section_levels == 0 else self.section_levels + 2

    def scaled(self, scale: float) -> SiteGroup:
        low, high = (max(self.min_pages, round(n * scale)) for n in self.pages)
        if self.section_levels == 0:
            low = high = 1
        return replace(self, count=max(1, round(self.count * scale)), pages=(low, max(low, high)))


@dataclass(frozen=True)
class TreeWebConfig:
    """What to build; ``build_tree_web(config)`` is a pure function of this value."""

    name: str
    groups: tuple[SiteGroup, ...]
    seed: int = 11
    crawl_delay_share: float = 0.1
    """Share of each group's hosts whose robots.txt states a ``Crawl-delay`` (rounded down per group)."""
    crawl_delay_values: tuple[float, ...] = (0.5, 1.0, 2.0)
    """The Crawl-delays, handed out in turn."""
    disallow_share: float = 0.05
    """Share of each group's hosts whose robots.txt says ``Disallow: /`` (rounded down per group)."""
    cross_link_share: float = 0.3
    """Share of articles (and one-page hosts) that link to one to three pages of other sites."""
    latency_range: tuple[float, float] = (0.01, 0.05)
    """Per-host response latency in seconds, drawn uniformly."""
    start_time: datetime = field(default_factory=lambda: SimWebConfig().start_time)
    page_edit_ratio: float = 0.0
    """Share of the pages edited at each ``start_time + k * page_edit_interval`` (as
    :attr:`SimWebConfig.page_edit_ratio`; the served process's clock moves on by one interval at a time)."""

    def __post_init__(self) -> None:
        if not self.groups or any(g.count < 1 or g.pages[0] < g.min_pages or g.pages[1] < g.pages[0]
                                  for g in self.groups):
            raise ValueError("every group needs count >= 1 and min_pages <= pages[0] <= pages[1]")
        if any(g.section_levels > 0 and g.pages[0] < g.section_levels + 2 for g in self.groups):
            raise ValueError("a host with n section levels needs at least n + 2 pages")
        if not 0 <= self.crawl_delay_share + self.disallow_share <= 1 or min(self.crawl_delay_values) <= 0:
            raise ValueError("crawl_delay_share + disallow_share must be within [0, 1], Crawl-delays > 0")

    def scaled(self, scale: float) -> TreeWebConfig:
        """The same web with ``scale`` times the hosts and pages per host (1 keeps it as it is)."""
        return self if scale == 1 else replace(self, groups=tuple(g.scaled(scale) for g in self.groups))

    @property
    def hosts(self) -> int:
        return sum(g.count for g in self.groups)


def tree_family(scale: float = 1.0) -> dict[str, TreeWebConfig]:
    """The webs of the politeness benchmark, each ``scale`` times as large (hosts and pages per host).

    * ``wide``: 320 sites of 10 to 100 pages, three levels (home, sections, articles);
    * ``narrow``: one site of 2,000 pages (two levels of sections) and 500 one-page sites;
    * ``deep``: 40 sites of 100 to 300 pages under five levels of sections;
    * ``mixed``: 200 sites of 10 to 60 pages, half of them with a Crawl-delay of 0.5, 1 or 2 s.

    Elsewhere 10% of the hosts state a Crawl-delay (wide: 1.5 or 2 s; deep: 1 s; narrow: 0.5, 1 or 2 s,
    on one-page hosts only), and in every web 5% say ``Disallow: /``.
    """
    webs = (
        TreeWebConfig("wide", (SiteGroup("site", 320, (10, 100), 1),), seed=11, crawl_delay_values=(1.5, 2.0)),
        TreeWebConfig("narrow", (SiteGroup("big", 1, (2000, 2000), 2), SiteGroup("one", 500, (1, 1), 0)), seed=12),
        TreeWebConfig("deep", (SiteGroup("deep", 40, (100, 300), 5),), seed=13, crawl_delay_values=(1.0,)),
        TreeWebConfig("mixed", (SiteGroup("mix", 200, (10, 60), 2),), seed=14, crawl_delay_share=0.5),
    )
    return {web.name: web.scaled(scale) for web in webs}


@dataclass
class _Section:
    path: str
    title: str
    level: int
    children: list[_Section] = field(default_factory=list)
    articles: list[str] = field(default_factory=list)  # paths


@dataclass
class _Site:
    """One host's tree before links are made."""

    host: str
    levels: int
    home_title: str
    sections: list[_Section]  # every section, top level first
    article_section: dict[str, _Section]  # article path -> its section
    titles: dict[str, str]  # path -> title, for every page
    popular: list[str]  # article paths

    @property
    def top(self) -> list[_Section]:
        return [s for s in self.sections if s.level == 1]

    def link(self, path: str, placement: Placement = "nav") -> SimLink:
        return SimLink(f"http://{self.host}{path}", self.titles[path], "internal", placement)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def branching(pages: int, levels: int) -> int:
    """Children per section: the least that leaves about ``ARTICLES_PER_SECTION`` articles per section,
    as long as the sections leave room for at least one article."""
    b = 1
    while True:
        sections = sum(b**level for level in range(1, levels + 1))
        if sections >= pages - 1:
            return max(1, b - 1)
        if pages - 1 - sections <= ARTICLES_PER_SECTION * sections:
            return b
        b += 1


def _plan_site(host: str, pages: int, levels: int, rng: random.Random) -> _Site:
    """The tree of one host: ``levels`` levels of sections, ``branching`` children each, the articles
    spread over the leaves (``LEAF_CAPACITY`` at most each, the rest over the inner sections)."""
    site = _Site(host, levels, words.brand(rng.getrandbits(32)), [], {}, {}, [])
    site.titles["/"] = site.home_title
    if levels == 0:
        return site
    b = branching(pages, levels)
    parents: list[_Section | None] = [None]
    for level in range(1, levels + 1):
        layer = []
        for parent in parents:
            for _ in range(b):
                if len(site.sections) + 1 >= pages - 1:  # keep one page for an article at least
                    break
                title = words.brand(rng.getrandbits(32))
                base = parent.path if parent is not None else "/"
                section = _Section(f"{base}{_slug(title)}-{len(site.sections) + 1}/", title, level)
                if parent is not None:
                    parent.children.append(section)
                layer.append(section)
                site.sections.append(section)
                site.titles[section.path] = title
        parents = list(layer)
    leaves = [s for s in site.sections if not s.children]
    inner = [s for s in site.sections if s.children]
    weights = [rng.uniform(0.5, 1.5) for _ in leaves]
    for n in range(pages - 1 - len(site.sections)):
        open_leaves = [(s, w) for s, w in zip(leaves, weights, strict=True) if len(s.articles) < LEAF_CAPACITY]
        if open_leaves:
            section = rng.choices([s for s, _ in open_leaves], weights=[w for _, w in open_leaves])[0]
        else:
            section = inner[n % len(inner)]
        title = words.title(rng.getrandbits(32))
        path = f"{section.path}{_slug(title)}-{n + 1}.html"
        section.articles.append(path)
        site.article_section[path] = section
        site.titles[path] = title
    site.popular = rng.sample(list(site.article_section), min(POPULAR, len(site.article_section)))
    return site


def _robots(variant: RobotsVariant, delay: float | None) -> tuple[RobotsGroup, ...]:
    if variant == "disallow_all":
        return (RobotsGroup(agents=("*",), disallow=("/",)),)
    return robots.groups_for(variant, delay)


def _host_specs(config: TreeWebConfig, rng: random.Random) -> list[tuple[HostSpec, SiteGroup, int]]:
    specs = []
    delays = iter(config.crawl_delay_values * (config.hosts + 1))
    for group in config.groups:
        names = [f"{group.label}-{i:03d}.test" for i in range(group.count)]
        shuffled = rng.sample(names, len(names))
        disallowed = set(shuffled[: int(config.disallow_share * len(names))])
        delayed = shuffled[len(disallowed): len(disallowed) + int(config.crawl_delay_share * len(names))]
        delay_of = {name: next(delays) for name in delayed}
        for name in names:
            variant: RobotsVariant = ("disallow_all" if name in disallowed else
                                      "crawl_delay" if name in delay_of else "allow_all")
            spec = HostSpec(name=name, registered_domain=name, brand=words.brand(rng.getrandbits(32)),
                            robots=variant, robots_groups=_robots(variant, delay_of.get(name)),
                            latency=round(rng.uniform(*config.latency_range), 4))
            specs.append((spec, group, rng.randint(*group.pages)))
    return specs


class TreeWeb(SimWeb):
    """A :class:`SimWeb` of structured sites: same questions, pages rendered by ``site_tree_render``."""

    def __init__(self, tree: TreeWebConfig, hosts: dict[str, HostSpec], pages: dict[str, Page],
                 blocks: dict[str, PageBlocks], levels: dict[str, int]) -> None:
        base = SimWebConfig(seed=tree.seed, hosts=len(hosts), pages=max(len(hosts), len(pages)),
                            hub_host_ratio=0.0, start_time=tree.start_time, page_edit_ratio=tree.page_edit_ratio)
        super().__init__(base, hosts, pages, {})
        self.tree = tree
        self.blocks = blocks
        self.levels = levels
        """Each page's level: 0 for a home page, 1 for a top section, and so on."""
        self._boilerplate: dict[str, Boilerplate] = {}
        self._tree_html: OrderedDict[tuple[str, int], str] = OrderedDict()

    def html(self, url: str, now: datetime | None = None) -> str | None:
        page = self.page_at(url, now)
        if page is None:
            return None
        key = (url, self.revision(url, now))
        cached = self._tree_html.get(key)
        if cached is not None:
            return cached
        spec = self.hosts[page.host]
        parts = self._boilerplate.get(page.host)
        if parts is None:
            parts = self._boilerplate[page.host] = boilerplate(spec, self.blocks[spec.home_url])
        text = self.edited(render_tree_page(page, spec, self.blocks[url], parts), page, key[1])
        self._tree_html[key] = text
        if len(self._tree_html) > simweb_pages.HTML_CACHE_SIZE:
            self._tree_html.popitem(last=False)
        return text


class _Builder:
    """Makes every page's links and records once all sites are planned (cross-site links need them all)."""

    def __init__(self, config: TreeWebConfig, sites: dict[str, _Site], rng: random.Random) -> None:
        self.config = config
        self.sites = sites
        self.names = sorted(sites)
        self.rng = rng
        self.pages: dict[str, Page] = {}
        self.blocks: dict[str, PageBlocks] = {}
        self.levels: dict[str, int] = {}

    def _external(self) -> SimLink:
        other = self.sites[self.rng.choice(self.names)]
        articles = list(other.article_section)
        draw = self.rng.random()
        if not articles or draw < 0.15:
            path = "/"
        elif draw < 0.6:
            path = self.rng.choice(other.popular)
        else:
            path = self.rng.choice(articles)
        return replace(other.link(path, "article"), kind="external")

    def externals(self, host: str) -> tuple[SimLink, ...]:
        """Links to one to three pages of other sites, for ``cross_link_share`` of the pages asking."""
        if self.rng.random() >= self.config.cross_link_share:
            return ()
        found = {link.target_url: link for link in (self._external() for _ in range(self.rng.randint(1, 3)))}
        return tuple(link for url, link in found.items() if not url.startswith(f"http://{host}/"))

    def add(self, site: _Site, path: str, role: PageRole, level: int, paragraphs: int, published: datetime,
            blocks: PageBlocks) -> None:
        url = f"http://{site.host}{path}"
        self.pages[url] = Page(url=url, host=site.host, path=path, title=site.titles[path], links=blocks.links(),
                               published_at=published, role=role,
                               text_spec=TextSpec(self.rng.getrandbits(64), paragraphs))
        self.blocks[url] = blocks
        self.levels[url] = level

    def site(self, site: _Site) -> None:
        rng, host = self.rng, site.host
        updated = self.config.start_time - timedelta(hours=rng.uniform(1, 48))
        if site.levels == 0:
            self.add(site, "/", "home", 0, rng.randint(6, 30), updated, PageBlocks(inline=self.externals(host)))
            return
        shared = PageBlocks(
            menu=(site.link("/"), *(site.link(s.path) for s in site.top[:MENU_SIZE])),
            sidebar=tuple(site.link(p) for p in site.popular),
            footer=tuple(site.link(s.path, "footer") for s in site.top),
        )
        latest = sorted(site.article_section, key=lambda _: rng.random())[:10]
        self.add(site, "/", "home", 0, 3, updated, replace(
            shared, listing=tuple(site.link(p, "article") for p in [s.path for s in site.top] + latest)))
        for section in site.sections:
            crumbs = tuple(site.link(s.path) for s in site.sections
                           if section.path.startswith(s.path) and s is not section)
            listing = tuple(site.link(p, "article") for p in [c.path for c in section.children] + section.articles)
            self.add(site, section.path, "page", section.level, 2, updated,
                     replace(shared, breadcrumb=crumbs, listing=listing))
        for path, section in site.article_section.items():
            crumbs = tuple(site.link(s.path) for s in site.sections if path.startswith(s.path))
            siblings = [p for p in section.articles if p != path]
            related = tuple(site.link(p, "article") for p in rng.sample(siblings, min(SIBLINGS, len(siblings))))
            paragraphs = min(40, max(4, round(rng.lognormvariate(2.5, 0.6))))
            published = self.config.start_time - timedelta(days=rng.uniform(0.1, 900))
            self.add(site, path, "article", section.level + 1, paragraphs, published,
                     replace(shared, breadcrumb=crumbs, inline=related + self.externals(host)))


def build_tree_web(config: TreeWebConfig) -> TreeWeb:
    """The web ``config`` describes, the same in any process (one ``random.Random(seed)`` stream)."""
    rng = random.Random(config.seed)
    planned = _host_specs(config, rng)
    sites = {spec.name: _plan_site(spec.name, pages, group.section_levels, rng) for spec, group, pages in planned}
    builder = _Builder(config, sites, rng)
    for name in builder.names:
        builder.site(sites[name])
    hosts = {spec.name: spec for spec, _, _ in planned}
    return TreeWeb(config, hosts, builder.pages, builder.blocks, builder.levels)
