"""The simulated web as built: ground truth for tests, and the pages the server sends.

Time matters for hubs: their articles exist from their appearance time on,
and a hub page lists the newest ones visible at the moment it is asked; and, with
``page_edit_ratio``, for the ordinary pages edited at each ``page_edit_interval``. Every
question that depends on time takes ``now``; ``None`` means the web's
``start_time``, the instant a default clock starts at.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections import OrderedDict, deque
from collections.abc import Iterable
from datetime import datetime
from html import escape
from urllib.parse import urlsplit

from libs.simweb import robots
from libs.simweb.config import SimWebConfig
from libs.simweb.hubs import Hub
from libs.simweb.model import HostSpec, Page, SimLink
from libs.simweb.pagerank import pagerank
from libs.simweb.render import render_page

logger = logging.getLogger(__name__)

HTML_CACHE_SIZE = 4096


def split_url(url: str) -> tuple[str, str] | None:
    """``(host, path with query)`` of an http(s) URL, or ``None`` if it is not one."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not hostname:
        return None
    path = parts.path or "/"
    return hostname.rstrip("."), path + (f"?{parts.query}" if parts.query else "")


class SimWeb:
    """Hosts, pages and hubs of one simulated web, and the answers a perfect crawler would know."""

    def __init__(self, config: SimWebConfig, hosts: dict[str, HostSpec], pages: dict[str, Page],
                 hubs: dict[str, Hub]) -> None:
        self.config = config
        self.hosts = hosts
        self.pages = pages
        """Every page that ever exists, hub articles included (see ``pages_at``)."""
        self._hubs = hubs
        self._html: OrderedDict[tuple[str, str, int], str] = OrderedDict()

    @property
    def start_time(self) -> datetime:
        return self.config.start_time

    def _now(self, now: datetime | None) -> datetime:
        return self.config.start_time if now is None else now

    def home_pages(self) -> list[str]:
        """The home page of every host, in host order: seeding all of them reaches every allowed page."""
        return [host.home_url for host in self.hosts.values()]

    def hub_urls(self) -> list[str]:
        return list(self._hubs)

    def pages_at(self, now: datetime | None = None) -> dict[str, Page]:
        """Pages that exist at ``now`` (hub articles appear over time; all others always exist)."""
        moment = self._now(now)
        return {url: page for url, page in self.pages.items() if page.exists_at(moment)}

    def page_at(self, url: str, now: datetime | None = None) -> Page | None:
        page = self.pages.get(url)
        return page if page is not None and page.exists_at(self._now(now)) else None

    def hub_articles(self, hub_url: str) -> list[tuple[str, datetime]]:
        """Every article of a hub with its appearance time, oldest first (past and future)."""
        return list(self._hubs[hub_url].articles)

    def hub_listing(self, hub_url: str, now: datetime | None = None) -> list[tuple[str, datetime]]:
        """What the hub page lists at ``now``: visible articles, newest first, capped at ``hub_list_size``."""
        return self._hubs[hub_url].listing(self._now(now), self.config.hub_list_size)

    def links_at(self, url: str, now: datetime | None = None) -> tuple[SimLink, ...]:
        """The links of the page as served at ``now``: ``Page.links`` plus, for a hub, its listing."""
        page = self.pages[url]
        if url not in self._hubs:
            return page.links
        listed = tuple(
            SimLink(article, self.pages[article].title, "internal", "article")
            for article, _ in self.hub_listing(url, now)
        )
        return page.links + listed

    def robots_txt(self, host: str) -> tuple[int, str]:
        """``(status, body)`` served for ``http://host/robots.txt``."""
        spec = self.hosts[host]
        status = spec.robots_status
        return status, robots.render(spec) if status == 200 else ""

    def allowed(self, url: str, user_agent: str = "trawl") -> bool:
        """Whether robots.txt lets ``user_agent`` (a product token) fetch ``url``.

        A host that answers 503 for robots.txt allows nothing (RFC 9309), one that
        answers 404 allows everything. Hosts the web does not have answer 404 to
        everything, robots.txt included, so they count as allowed. URLs that are not
        http(s) (or are malformed) are never allowed.
        """
        target = split_url(url)
        if target is None:
            return False
        host, path = target
        spec = self.hosts.get(host)
        return True if spec is None else robots.allows(spec, path, user_agent)

    def crawl_delay(self, host: str, user_agent: str = "trawl") -> float | None:
        """The Crawl-delay (seconds) robots.txt sets for ``user_agent`` on ``host``, if any."""
        return robots.crawl_delay(self.hosts[host], user_agent)

    def reachable(
        self,
        seeds: Iterable[str],
        user_agent: str = "trawl",
        respect_robots: bool = True,
        follow_nofollow: bool = False,
        now: datetime | None = None,
    ) -> set[str]:
        """Pages a perfect crawler fetches starting from ``seeds`` at ``now``.

        Breadth-first over internal and external links of fetched pages; a page
        robots.txt forbids (when ``respect_robots``) is neither fetched nor
        expanded, and is not in the result; a page with meta nofollow adds no
        links unless ``follow_nofollow``. Seeds that are not pages are ignored.
        """
        moment = self._now(now)

        def fetchable(url: str) -> bool:
            page = self.pages.get(url)
            if page is None or not page.exists_at(moment):
                return False
            return not respect_robots or self.allowed(url, user_agent)

        seen = {url for url in seeds if fetchable(url)}
        queue = deque(sorted(seen))
        while queue:
            url = queue.popleft()
            if self.pages[url].nofollow and not follow_nofollow:
                continue
            for link in self.links_at(url, moment):
                if link.kind != "bad" and link.target_url not in seen and fetchable(link.target_url):
                    seen.add(link.target_url)
                    queue.append(link.target_url)
        return seen

    def pagerank(self, damping: float = 0.85, now: datetime | None = None) -> dict[str, float]:
        """PageRank over the pages existing at ``now`` and their internal and external links.

        Dangling pages (no link to an existing page) spread their score uniformly;
        scores sum to 1. Robots rules and nofollow are ignored: this is the graph's
        own importance, not what a crawler can see.
        """
        moment = self._now(now)
        graph = {
            url: [link.target_url for link in self.links_at(url, moment) if link.kind != "bad"]
            for url in self.pages_at(moment)
        }
        return pagerank(graph, damping)

    def _share(self, *parts: object) -> float:
        """A stable draw in [0, 1) from the web's seed and ``parts``."""
        return zlib.crc32(":".join(map(str, (self.config.seed, *parts))).encode()) / 2**32

    def revision(self, url: str, now: datetime | None = None) -> int:
        """The page's latest edit as of ``now`` (k: edited at ``start_time + k * page_edit_interval``; 0: none)."""
        ratio = self.config.page_edit_ratio
        if ratio <= 0 or url in self._hubs:
            return 0
        for k in range(int((self._now(now) - self.start_time) / self.config.page_edit_interval), 0, -1):
            if self._share("edit", k, url) < ratio:
                return k
        return 0

    def honours_validators(self, host: str) -> bool:
        """Whether ``host`` answers a conditional request with a 304 when it can (see ``conditional_hosts_ratio``)."""
        ratio = self.config.conditional_hosts_ratio
        return ratio >= 1.0 or self._share("conditional", host) < ratio

    def last_modified(self, url: str, now: datetime | None = None) -> datetime | None:
        """When the page last changed as of ``now``: its date (or its last edit), or for a hub its newest
        listed article."""
        page = self.page_at(url, now)
        if page is None:
            return None
        if url in self._hubs:
            listing = self.hub_listing(url, now)
            return listing[0][1] if listing else page.published_at
        edit = self.revision(url, now)
        return max(page.published_at, self.start_time + edit * self.config.page_edit_interval) if edit \
            else page.published_at

    def etag(self, url: str, now: datetime | None = None) -> str | None:
        """The strong ETag of the page as served at ``now``: a digest of its HTML."""
        html = self.html(url, now)
        if html is None:
            return None
        key = hashlib.blake2b(html.encode(), digest_size=12).hexdigest()
        return f'"{key}"'

    def edited(self, text: str, page: Page, edit: int) -> str:
        """``text`` as the page's ``edit``-th revision: a dated note closes its article (none for 0)."""
        if not edit:
            return text
        edited_at = self.start_time + edit * self.config.page_edit_interval
        note = f"<p>Updated on {escape(f'{edited_at:%d %B %Y}')}: revision {edit} of {escape(page.title)}.</p>\n"
        return text.replace("</article>", note + "</article>", 1)

    def html(self, url: str, now: datetime | None = None) -> str | None:
        """The page's HTML at ``now``, or ``None`` if no such page exists then (a 404)."""
        page = self.page_at(url, now)
        if page is None:
            return None
        listing = self.hub_listing(url, now) if url in self._hubs else []
        edit = self.revision(url, now)
        key = (url, listing[0][0] if listing else "", edit)
        cached = self._html.get(key)
        if cached is not None:
            self._html.move_to_end(key)
            return cached
        entries = [(article, self.pages[article].title, at) for article, at in listing]
        text = self.edited(render_page(page, self.hosts[page.host], entries), page, edit)
        self._html[key] = text
        if len(self._html) > HTML_CACHE_SIZE:
            self._html.popitem(last=False)
        return text
