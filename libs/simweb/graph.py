"""The static link graph: ordinary pages, their links and their flags.

Shape, and why:

* Reachability: within each host, every page gets a *parent*, an earlier page of
  the same host chosen uniformly (a random recursive tree rooted at the home
  page) that links to it. Parents are always fetchable, followable pages (not
  private, not nofollow, not duplicates, with links), so seeding all home pages
  reaches every page that robots.txt allows, even when nofollow is respected.
* Scale-free in-degree: the remaining article links go to targets drawn in
  proportion to a Pareto-distributed *fitness* per page (a Chung-Lu style
  model, like preferential attachment but with links that may point to later
  pages too); navigation menus add host-wide hubs (home, featured pages).
* Duplicates: an exact duplicate copies its original (same host) whole, so its
  HTML is byte-identical; a near-duplicate copies another page's title, date and
  article links, and its prose with a few words replaced.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import accumulate

from libs.simweb.config import SimWebConfig
from libs.simweb.hosts import HostPlan
from libs.simweb.model import PRIVATE_PREFIX, HostSpec, LinkKind, Page, PageRole, SimLink
from libs.simweb.words import TextSpec, title

BAD_LINKS: tuple[tuple[str, str], ...] = (
    ("javascript:void(0)", "Open menu"),
    ("mailto:x@y.test", "Email the editors"),
    ("http://[::1", "Mirror"),
    ("data:text/html,hello", "Badge"),
)
FEATURED_PER_HOST = 3


@dataclass
class _Slot:
    """A page under construction."""

    index: int
    host: str
    domain: str
    path: str
    role: PageRole
    weight: float
    title: str
    published_at: datetime
    text_spec: TextSpec
    no_out: bool = False
    nofollow: bool = False
    noindex: bool = False
    bad: tuple[int, ...] = ()
    dup_of: int | None = None
    near_of: int | None = None
    targets: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.host}{self.path}"

    @property
    def ordinary(self) -> bool:
        return self.role in ("page", "private")

    @property
    def writes_links(self) -> bool:
        """Whether this page's article links are drawn (not copied, not absent)."""
        return self.role in ("home", "page", "private") and not self.no_out and self.dup_of is None \
            and self.near_of is None

    @property
    def can_parent(self) -> bool:
        return (self.role == "home" or self.role == "page") and self.writes_links and not self.nofollow


def text_spec(config: SimWebConfig, rng: random.Random, median: int | None = None) -> TextSpec:
    low, high = config.paragraphs_range
    drawn = round(rng.lognormvariate(math.log(median or config.paragraphs_median), 0.55))
    return TextSpec(seed=rng.getrandbits(64), paragraphs=min(high, max(low, drawn)))


def distinct_anchors(links: list[SimLink]) -> list[SimLink]:
    """Suffix anchors that repeat on different targets, so every anchor names one target."""
    owner: dict[str, str] = {}
    out = []
    for link in links:
        anchor, n = link.anchor, 1
        while owner.setdefault(anchor.lower(), link.target_url) != link.target_url:
            n += 1
            anchor = f"{link.anchor}, part {n}"
        out.append(link if n == 1 else replace(link, anchor=anchor))
    return out


class SiteLinks:
    """Link targets and host-wide menus, shared by the static graph and the hub articles."""

    def __init__(self, slots: list[_Slot], hosts: dict[str, HostSpec]) -> None:
        self._slots = slots
        self._hosts = hosts
        self._by_domain: dict[str, tuple[list[int], list[float]]] = {}
        members: dict[str, list[int]] = {}
        for slot in slots:
            members.setdefault(slot.domain, []).append(slot.index)
        for domain, ids in members.items():
            self._by_domain[domain] = (ids, list(accumulate(slots[i].weight for i in ids)))
        self._global_cum = list(accumulate(slot.weight for slot in slots))
        self._nav: dict[str, list[SimLink]] = {}
        self._footer: dict[str, list[SimLink]] = {}
        for host in hosts.values():
            self._nav[host.name] = self._build_nav(host)
            self._footer[host.name] = [
                SimLink(other.home_url, other.brand, "internal", "footer")
                for other in hosts.values()
                if other.registered_domain == host.registered_domain and other.name != host.name
            ]

    def _build_nav(self, host: HostSpec) -> list[SimLink]:
        ids = self._by_domain[host.registered_domain][0]
        candidates = [self._slots[i] for i in ids if self._slots[i].host == host.name]
        featured = sorted(
            (s for s in candidates if s.role == "page" and s.dup_of is None),
            key=lambda s: (-s.weight, s.index),
        )[:FEATURED_PER_HOST]
        nav = [SimLink(host.home_url, "Home", "internal", "nav")]
        nav += [SimLink(s.url, s.title, "internal", "nav") for s in featured]
        nav += [
            SimLink(hub, "News" if n == 0 else f"News {n + 1}", "internal", "nav")
            for n, hub in enumerate(host.hubs)
        ]
        return distinct_anchors(nav)

    def nav(self, host: str) -> list[SimLink]:
        return list(self._nav[host])

    def footer(self, host: str) -> list[SimLink]:
        return list(self._footer[host])

    def anchor(self, index: int) -> str:
        slot = self._slots[index]
        if slot.role == "home":
            return self._hosts[slot.host].brand
        return slot.title

    def pick(self, domain: str, external: bool, rng: random.Random) -> int | None:
        """A target drawn by fitness, inside ``domain`` or (external) outside it; ``None`` if none."""
        if not external:
            ids, cum = self._by_domain[domain]
            return ids[bisect_left(cum, rng.random() * cum[-1])]
        for _ in range(12):
            index = bisect_left(self._global_cum, rng.random() * self._global_cum[-1])
            if self._slots[index].domain != domain:
                return index
        return None

    def link_to(self, index: int, from_domain: str) -> SimLink:
        slot = self._slots[index]
        kind: LinkKind = "internal" if slot.domain == from_domain else "external"
        return SimLink(slot.url, self.anchor(index), kind, "article")


class _Builder:
    def __init__(self, config: SimWebConfig, plans: list[HostPlan], rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self.hosts = {plan.spec.name: plan.spec for plan in plans}
        self.slots: list[_Slot] = []
        self.by_host: dict[str, list[int]] = {}
        for plan in plans:
            self._add_host(plan)

    def _new(self, host: HostSpec, path: str, role: PageRole, weight: float, heading: str,
             spec: TextSpec, published_at: datetime) -> _Slot:
        slot = _Slot(len(self.slots), host.name, host.registered_domain, path, role, weight, heading,
                     published_at, spec)
        self.slots.append(slot)
        self.by_host.setdefault(host.name, []).append(slot.index)
        return slot

    def _fitness(self) -> float:
        return self.rng.paretovariate(self.config.page_fitness_exponent)

    def _published(self) -> datetime:
        seconds = self.rng.randrange(86_400, 60 * 86_400)
        return self.config.start_time - timedelta(seconds=seconds)

    def _add_host(self, plan: HostPlan) -> None:
        config, rng, host = self.config, self.rng, plan.spec
        self._new(host, "/", "home", 5 * self._fitness(), f"{host.brand}: Home",
                  text_spec(config, rng, median=6), self._published())
        for n, hub in enumerate(host.hubs):
            self._new(host, hub[len(host.home_url) - 1:], "hub", 2 * self._fitness(),
                      f"{host.brand} News" + ("" if n == 0 else f" {n + 1}"),
                      TextSpec(rng.getrandbits(64), 3), config.start_time - config.hub_backlog)
        sections = max(1, min(12, 1 + plan.page_count // 40))
        private_host = host.robots == "disallow_private"
        privates = 0
        for k in range(1, plan.page_count):
            last = k == plan.page_count - 1
            private = private_host and (rng.random() < config.private_page_ratio or (last and privates == 0))
            privates += private
            section = PRIVATE_PREFIX if private else f"/section-{rng.randrange(sections) + 1}/"
            path = f"{section}page-{k}.html"
            slot = self._new(host, path, "private" if private else "page", self._fitness(),
                             title(rng.getrandbits(64)), text_spec(config, rng), self._published())
            self._flag(slot)

    def _flag(self, slot: _Slot) -> None:
        config, rng = self.config, self.rng
        draw = rng.random()
        slot.nofollow = rng.random() < config.nofollow_ratio
        slot.noindex = rng.random() < config.noindex_ratio
        if rng.random() < config.bad_link_page_ratio:
            slot.bad = tuple(sorted(rng.sample(range(len(BAD_LINKS)), rng.randint(1, 3))))
        if draw < config.no_out_links_ratio:
            slot.no_out = True
            slot.bad = ()
            return
        draw -= config.no_out_links_ratio
        if draw < config.exact_duplicate_ratio:
            originals = [i for i in self.by_host[slot.host][:-1] if self._original(self.slots[i])]
            if originals:
                slot.dup_of = rng.choice(originals)
            return
        draw -= config.exact_duplicate_ratio
        if draw < config.near_duplicate_ratio:
            originals = [s.index for s in self.slots[: slot.index] if self._original(s) and s.role == "page"]
            if originals:
                original = self.slots[rng.choice(originals)]
                slot.near_of = original.index
                slot.title, slot.published_at = original.title, original.published_at
                slot.text_spec = replace(original.text_spec, edit_seed=rng.getrandbits(64),
                                         edits=config.near_duplicate_edits)

    @staticmethod
    def _original(slot: _Slot) -> bool:
        return slot.ordinary and slot.dup_of is None and slot.near_of is None

    def wire(self, site: SiteLinks) -> None:
        """Parents first (reachability), then fitness-drawn article links."""
        rng, config = self.rng, self.config
        for ids in self.by_host.values():
            parents = [ids[0]]
            for i in ids[1:]:
                slot = self.slots[i]
                if not slot.ordinary:
                    continue
                self.slots[rng.choice(parents)].targets.append(i)
                if slot.can_parent:
                    parents.append(i)
        for slot in self.slots:
            if not slot.writes_links:
                continue
            seen = {slot.index, *slot.targets}
            wanted = int(rng.expovariate(1.0 / config.mean_out_links) + 0.5) if config.mean_out_links else 0
            for _ in range(min(config.max_out_links, wanted)):
                target = site.pick(slot.domain, rng.random() < config.external_link_ratio, rng)
                if target is not None and target not in seen:
                    seen.add(target)
                    slot.targets.append(target)
            rng.shuffle(slot.targets)

    def pages(self, site: SiteLinks) -> dict[str, Page]:
        built: dict[int, Page] = {}
        for slot in self.slots:
            if slot.dup_of is None:
                built[slot.index] = self._page(slot, site)
        for slot in self.slots:
            if slot.dup_of is not None:
                original = built[slot.dup_of]
                built[slot.index] = replace(original, url=slot.url, path=slot.path, role=slot.role,
                                            duplicate_of=original.url)
        return {self.slots[i].url: built[i] for i in sorted(built)}

    def _page(self, slot: _Slot, site: SiteLinks) -> Page:
        links: list[SimLink] = []
        if not slot.no_out:
            source = self.slots[slot.near_of] if slot.near_of is not None else slot
            article = [site.link_to(t, slot.domain) for t in source.targets]
            nav = site.nav(slot.host)
            footer = site.footer(slot.host)
            for b in slot.bad:
                href, anchor = BAD_LINKS[b]
                if b == 0:
                    nav.append(SimLink(href, anchor, "bad", "nav"))
                else:
                    footer.append(SimLink(href, anchor, "bad", "footer"))
            links = distinct_anchors(nav) + distinct_anchors(article) + distinct_anchors(footer)
        near = self.slots[slot.near_of].url if slot.near_of is not None else None
        return Page(url=slot.url, host=slot.host, path=slot.path, title=slot.title, links=tuple(links),
                    published_at=slot.published_at, role=slot.role, text_spec=slot.text_spec,
                    near_duplicate_of=near, nofollow=slot.nofollow, noindex=slot.noindex)


def build_static(config: SimWebConfig, plans: list[HostPlan],
                 rng: random.Random) -> tuple[dict[str, Page], SiteLinks]:
    """All pages that always exist, and the link source the hub articles reuse."""
    builder = _Builder(config, plans, rng)
    site = SiteLinks(builder.slots, builder.hosts)
    builder.wire(site)
    return builder.pages(site), site
