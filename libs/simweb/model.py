"""Ground-truth records of the simulated web: hosts, pages and links.

These are plain frozen values; the builder (``graph``, ``hubs``) creates them and
:class:`~libs.simweb.web.SimWeb` answers questions about them. A page keeps only
the seed of its prose (:class:`~libs.simweb.words.TextSpec`); ``Page.text`` is
generated on first use, which keeps building thousands of pages fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Literal

from libs.simweb.words import TextSpec, article_text

LinkKind = Literal["internal", "external", "bad"]
"""``internal``: same registered domain; ``external``: another one; ``bad``: not fetchable at all."""
Placement = Literal["nav", "article", "footer"]
PageRole = Literal["home", "page", "private", "hub", "article"]
RobotsVariant = Literal["allow_all", "disallow_private", "crawl_delay", "missing", "unavailable", "disallow_all"]
"""``missing`` answers 404 (allow all), ``unavailable`` answers 503 (RFC 9309: disallow all);
``disallow_all`` answers 200 with ``Disallow: /`` (the structured sites of ``site_tree``)."""

PRIVATE_PREFIX = "/private/"


@dataclass(frozen=True)
class SimLink:
    """One ``<a href>`` of a page; ``target_url`` is absolute (or the raw href of a bad link)."""

    target_url: str
    anchor: str
    kind: LinkKind
    placement: Placement = "article"


@dataclass(frozen=True)
class Page:
    """A page as served, minus its HTML.

    For a hub page, ``links`` holds only its fixed links: the articles it lists
    depend on time (see ``SimWeb.links_at``).
    """

    url: str
    host: str
    path: str
    title: str
    links: tuple[SimLink, ...]
    published_at: datetime
    role: PageRole
    text_spec: TextSpec
    duplicate_of: str | None = None
    """Set on exact duplicates: the HTML is byte-identical to this page's."""
    near_duplicate_of: str | None = None
    """Set on near-duplicates: same title and date, article text differs in a few words."""
    nofollow: bool = False
    noindex: bool = False
    appears_at: datetime | None = None
    """Hub articles exist from this instant on; ``None`` for pages that always exist."""
    hub_url: str | None = None
    """For hub articles: the hub page that lists them."""

    @cached_property
    def text(self) -> str:
        """Main text (article paragraphs with their inline link sentences), without title or date."""
        anchors = [link.anchor for link in self.links if link.placement == "article"]
        return article_text(self.text_spec, anchors)

    def exists_at(self, now: datetime) -> bool:
        return self.appears_at is None or self.appears_at <= now


@dataclass(frozen=True)
class RobotsGroup:
    """One ``User-agent`` group of a robots.txt file."""

    agents: tuple[str, ...]
    disallow: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    crawl_delay: float | None = None


@dataclass(frozen=True)
class HostSpec:
    """A host name of the simulated web and how it answers."""

    name: str
    registered_domain: str
    """The last two labels: ``blog.site-007.test`` belongs to ``site-007.test``."""
    brand: str
    robots: RobotsVariant
    robots_groups: tuple[RobotsGroup, ...]
    latency: float = 0.0
    """Seconds the server waits before answering each request for this host."""
    hubs: tuple[str, ...] = ()
    """URLs of this host's hub (list) pages."""

    @property
    def home_url(self) -> str:
        return f"http://{self.name}/"

    @property
    def robots_status(self) -> int:
        """HTTP status of ``/robots.txt``."""
        return {"missing": 404, "unavailable": 503}.get(self.robots, 200)

    @property
    def crawl_delay(self) -> float | None:
        """Crawl-delay of the ``*`` group, if any."""
        for group in self.robots_groups:
            if "*" in group.agents:
                return group.crawl_delay
        return None
