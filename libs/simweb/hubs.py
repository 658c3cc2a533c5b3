"""Hub (list) pages whose articles appear over time.

Each hub's articles appear at the events of a non-homogeneous Poisson process
whose rate is ``hub_rate_per_hour`` times a per-hub factor times an hour-of-day
weight times a day-of-week weight (UTC), plus the hub's bursts, the hour weights
shifted by the hub's own shift (``rhythm``). The process is simulated by thinning
(Lewis and Shedler): candidate events at the maximum rate, each kept with
probability ``rate(t) / max rate``; everything comes from the builder's seeded
random stream, so the articles and their times are fixed by the config.

Articles are ordinary pages that exist from their appearance time on. Each links
back to its hub and to the article before it, so an article that has scrolled
off the hub's listing (capped at ``hub_list_size``) stays reachable.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from libs.simweb.config import SimWebConfig
from libs.simweb.graph import SiteLinks, distinct_anchors, text_spec
from libs.simweb.model import HostSpec, Page, SimLink
from libs.simweb.rhythm import HubRhythm, draw_rhythm
from libs.simweb.words import title

ARTICLE_MEDIAN_PARAGRAPHS = 8
ARTICLE_EXTRA_LINKS = 3


def hourly_rate(config: SimWebConfig, at: datetime, factor: float = 1.0, rhythm: HubRhythm | None = None) -> float:
    """Expected articles per hour for a hub with rate ``factor`` (and ``rhythm``) at instant ``at``."""
    if rhythm is None:
        return (config.hub_rate_per_hour * factor * config.hub_hour_weights[at.hour]
                * config.hub_weekday_weights[at.weekday()])
    return (config.hub_rate_per_hour * factor * rhythm.hour_weight(config, at)
            * config.hub_weekday_weights[at.weekday()] + rhythm.burst_rate(at))


def appearance_times(config: SimWebConfig, rng: random.Random, factor: float,
                     rhythm: HubRhythm | None = None) -> list[datetime]:
    """Event times of the hub's Poisson process over ``[start - backlog, start + horizon]``, sorted."""
    peak = config.hub_rate_per_hour * factor * max(config.hub_hour_weights) * max(config.hub_weekday_weights)
    if rhythm is not None:
        peak += rhythm.peak_burst_rate
    begin = config.start_time - config.hub_backlog
    end = config.start_time + config.hub_horizon
    times: list[datetime] = []
    if peak <= 0:
        return times
    hours = 0.0
    span = (end - begin).total_seconds() / 3600.0
    while True:
        hours += rng.expovariate(peak)
        if hours > span:
            return times
        at = begin + timedelta(seconds=int(hours * 3600.0))
        if rng.random() * peak < hourly_rate(config, at, factor, rhythm):
            times.append(at)


@dataclass(frozen=True)
class Hub:
    """A hub page's articles in order of appearance (oldest first)."""

    url: str
    articles: tuple[tuple[str, datetime], ...]
    rhythm: HubRhythm = field(default_factory=HubRhythm)

    def listing(self, now: datetime, size: int) -> list[tuple[str, datetime]]:
        """Articles visible at ``now``, newest first, at most ``size`` of them."""
        visible = bisect_right(self.articles, now, key=lambda article: article[1])
        return [self.articles[i] for i in range(visible - 1, max(-1, visible - 1 - size), -1)]


def build_hubs(config: SimWebConfig, hosts: dict[str, HostSpec], site: SiteLinks,
               rng: random.Random) -> tuple[dict[str, Page], dict[str, Hub]]:
    """Articles of every hub (as pages) and the hubs themselves, keyed by URL."""
    pages: dict[str, Page] = {}
    hubs: dict[str, Hub] = {}
    for host in hosts.values():
        for hub_url in host.hubs:
            factor = rng.uniform(0.5, 1.5)
            rhythm = draw_rhythm(config, hub_url, factor)
            times = appearance_times(config, rng, factor, rhythm)
            articles: list[tuple[str, datetime]] = []
            previous: Page | None = None
            for n, at in enumerate(times, start=1):
                page = _article(config, host, hub_url, n, at, previous, site, rng)
                pages[page.url] = page
                articles.append((page.url, at))
                previous = page
            hubs[hub_url] = Hub(hub_url, tuple(articles), rhythm)
    return pages, hubs


def _article(config: SimWebConfig, host: HostSpec, hub_url: str, n: int, at: datetime,
             previous: Page | None, site: SiteLinks, rng: random.Random) -> Page:
    path = f"{hub_url[len(host.home_url) - 1:]}story-{n:04d}.html"
    article: list[SimLink] = []
    if previous is not None:
        article.append(SimLink(previous.url, previous.title, "internal", "article"))
    seen: set[int] = set()
    for _ in range(rng.randint(1, ARTICLE_EXTRA_LINKS)):
        target = site.pick(host.registered_domain, rng.random() < config.external_link_ratio, rng)
        if target is not None and target not in seen:
            seen.add(target)
            article.append(site.link_to(target, host.registered_domain))
    links = site.nav(host.name) + distinct_anchors(article) + site.footer(host.name)
    return Page(
        url=f"http://{host.name}{path}",
        host=host.name,
        path=path,
        title=title(rng.getrandbits(64)),
        links=tuple(links),
        published_at=at,
        role="article",
        text_spec=text_spec(config, rng, median=ARTICLE_MEDIAN_PARAGRAPHS),
        appears_at=at,
        hub_url=hub_url,
    )
