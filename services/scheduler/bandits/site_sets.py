"""Deterministic site sets that imitate the two kinds of sites of the BeeBot paper (seed 003).

The paper crawled ten sites of each kind to depth 5 and explains its results by how external
links sit on their pages. We generate, for a seed, ten sites of one kind as reward sequences
in breadth-first order (the reward of a page = its external links), cut at ``max_pages``
pages (a policy never fetches more pages of one site than its budget):

- ``institutes`` (research institutes): "many pages without any external link and a few
  pages with very many". Links sit on few pages (about 15 to 20 links per link-bearing
  page, the counts drawn heavy-tailed). One large rich site (20-40 thousand pages, 2,500 to
  3,500 links; the paper's Pushkinskij Dom has 3,192 on 39,292) whose home page and upper
  sections already carry links. Seven plain sites (1-4 thousand pages, 30-150 links, home
  page 0-8 links). Two of those are "link catalogue" sites: one page among their first 60
  lists 300-600 links, and little follows it.
- ``universities``: "few links from many pages". Links are spread over many pages (about
  1.5 per link-bearing page) and thin out with depth. Half the sites are portals: a home page
  with 15-40 links, 60-200 more links, spread over the first few hundred pages. The other
  half are faculty-rich: 500-700 links in their departments' pages, but the home page and
  the first 5 to 20 pages (navigation) carry none.

Positions of link-bearing pages are drawn with weight ``exp(-position / scale)`` (links thin
out with depth); site sizes and link totals are log-uniform in the ranges above. The
parameters are the module constants below; ``generate(kind, seed)`` always returns the same
sites for the same arguments (Python's ``random.Random``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from services.scheduler.bandits.replay import SiteRewards

KINDS: tuple[str, ...] = ("institutes", "universities", "mixed", "varied")


@dataclass(frozen=True)
class SiteShape:
    """How one generated site's links are laid out over its pages."""

    pages: tuple[int, int]  # log-uniform range of the site's size
    links: tuple[int, int]  # log-uniform range of its links (home page and catalogue page apart)
    links_per_page: float  # mean links of a page that has any
    heaviness: float  # gamma shape of the split of links over those pages: small = heavy-tailed
    depth_scale: float  # links thin out as exp(-position / depth_scale)
    home_links: tuple[int, int]  # uniform range of the home page's links
    silent_start: tuple[int, int] = (1, 1)  # pages (home included) before the first link-bearing page
    catalogue: tuple[int, int] = (0, 0)  # log-uniform links of one catalogue page (0: none)
    catalogue_within: int = 60  # the catalogue page is among the first pages


RICH_INSTITUTE = SiteShape((20_000, 40_000), (2_500, 3_500), 20.0, 0.5, 1_500.0, (20, 60))
PLAIN_INSTITUTE = SiteShape((1_000, 4_000), (30, 150), 15.0, 0.5, 300.0, (0, 8))
CATALOGUE_INSTITUTE = SiteShape((1_000, 4_000), (30, 150), 15.0, 0.5, 300.0, (0, 8), catalogue=(300, 600))
PORTAL_UNIVERSITY = SiteShape((400, 13_000), (60, 200), 1.5, 3.0, 300.0, (15, 40))
FACULTY_UNIVERSITY = SiteShape((400, 13_000), (500, 700), 1.5, 3.0, 100.0, (0, 0), silent_start=(5, 20))

SHAPES: dict[str, tuple[SiteShape, ...]] = {
    "institutes": (RICH_INSTITUTE, *[CATALOGUE_INSTITUTE] * 2, *[PLAIN_INSTITUTE] * 7),
    "universities": (*[PORTAL_UNIVERSITY] * 5, *[FACULTY_UNIVERSITY] * 5),
    # the paper's third sample: both kinds in one set
    "mixed": (RICH_INSTITUTE, CATALOGUE_INSTITUTE, *[PLAIN_INSTITUTE] * 3, *[PORTAL_UNIVERSITY] * 3,
              *[FACULTY_UNIVERSITY] * 2),
}


def varied_shape(rng: random.Random) -> SiteShape:
    """A site of no kind in particular: every parameter of a shape drawn anew, over wider ranges than the kinds'."""
    low = _log_uniform(rng, (200, 20_000))
    links = _log_uniform(rng, (20, 3_000))
    return SiteShape(
        pages=(low, low + 1),
        links=(links, links + 1),
        links_per_page=math.exp(rng.uniform(math.log(1.0), math.log(30.0))),
        heaviness=math.exp(rng.uniform(math.log(0.3), math.log(4.0))),
        depth_scale=math.exp(rng.uniform(math.log(30.0), math.log(3_000.0))),
        home_links=(0, rng.choice((0, 5, 40))),
        silent_start=(1, rng.choice((1, 1, 10, 40, 120))),
        catalogue=(200, 800) if rng.random() < 0.2 else (0, 0),
        catalogue_within=rng.choice((20, 60, 300)),
    )


def _log_uniform(rng: random.Random, bounds: tuple[int, int]) -> int:
    low, high = bounds
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def _positions(rng: random.Random, pages: int, count: int, start: int, scale: float) -> list[int]:
    """``count`` distinct pages from ``start`` on, weighted by exp(-(page - start) / scale).

    Weighted sampling without replacement by keys ``u ** (1 / w)`` (Efraimidis and Spirakis).
    """
    keyed = []
    for page in range(start, pages):
        weight = math.exp(-(page - start) / scale) + 1e-4
        keyed.append((rng.random() ** (1.0 / weight), page))
    keyed.sort(reverse=True)
    return [page for _, page in keyed[:count]]


def _split(rng: random.Random, total: int, parts: int, shape: float) -> list[int]:
    weights = [rng.gammavariate(shape, 1.0) for _ in range(parts)]
    scale = sum(weights)
    return [max(1, round(total * w / scale)) for w in weights]


def _site(rng: random.Random, shape: SiteShape, max_pages: int) -> list[int]:
    pages = _log_uniform(rng, shape.pages)
    links = _log_uniform(rng, shape.links)
    rewards = [0] * pages
    rewards[0] = rng.randint(*shape.home_links)
    start = max(1, rng.randint(*shape.silent_start))
    where = _positions(rng, pages, max(1, round(links / shape.links_per_page)), start, shape.depth_scale)
    for page, count in zip(where, _split(rng, links, len(where), shape.heaviness), strict=True):
        rewards[page] += count
    if shape.catalogue[1]:
        rewards[rng.randint(1, shape.catalogue_within)] += _log_uniform(rng, shape.catalogue)
    return rewards[:max_pages]


def generate(kind: str, seed: int, max_pages: int = 2_000) -> list[SiteRewards]:
    """Ten sites of ``kind`` (one of :data:`KINDS`), in a seed-shuffled order."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of site set {kind!r}; known: {', '.join(KINDS)}")
    rng = random.Random(f"{kind}:{seed}")
    shapes = [varied_shape(rng) for _ in range(10)] if kind == "varied" else list(SHAPES[kind])
    rng.shuffle(shapes)
    prefix = kind[:4]
    return [
        SiteRewards(f"{prefix}{i:02d}.example", tuple(float(r) for r in _site(rng, shape, max_pages)))
        for i, shape in enumerate(shapes)
    ]
