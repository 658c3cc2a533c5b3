"""Settings of the simulated web: one frozen value fully determines the web built from it.

Every knob is a plain field with a default, so tests build a web directly with
``SimWebConfig(seed=3, hosts=20, pages=400)``; ``build_web`` turns the value into a
:class:`~libs.simweb.web.SimWeb` without reading anything else (no environment,
no global random state), which is what makes two builds of one config identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# Relative rate of new hub articles per hour of the day (UTC): quiet at night,
# a morning peak and a smaller evening one, as news sites publish.
DEFAULT_HOUR_WEIGHTS: tuple[float, ...] = (
    0.1, 0.05, 0.05, 0.05, 0.1, 0.2, 0.5, 1.0, 1.6, 2.0, 2.0, 1.8,
    1.5, 1.5, 1.6, 1.6, 1.5, 1.4, 1.3, 1.2, 1.0, 0.7, 0.4, 0.2,
)  # fmt: skip
# Relative rate per day of the week, Monday first: weekends are slower.
DEFAULT_WEEKDAY_WEIGHTS: tuple[float, ...] = (1.0, 1.1, 1.1, 1.0, 0.9, 0.45, 0.35)
# The rhythm seed 001 describes (see ``libs.simweb.rhythm.rhythmic_config``): updates by day,
# nights and weekends nearly flat.
DAYTIME_HOUR_WEIGHTS: tuple[float, ...] = (
    0.015, 0.015, 0.015, 0.015, 0.015, 0.02, 0.1, 0.4, 0.9, 1.1, 1.2, 1.1,
    1.0, 1.0, 1.1, 1.1, 1.0, 0.6, 0.3, 0.1, 0.03, 0.02, 0.015, 0.015,
)  # fmt: skip
QUIET_WEEKEND_WEIGHTS: tuple[float, ...] = (1.0, 1.05, 1.05, 1.0, 0.9, 0.06, 0.03)


@dataclass(frozen=True)
class SimWebConfig:
    """What to simulate; ``build_web(config)`` is a pure function of this value."""

    seed: int = 7
    hosts: int = 60
    """Total number of host names, subdomain hosts included."""
    pages: int = 5000
    """Ordinary pages over all hosts (home pages included); hub pages and their articles come on top."""
    subdomain_ratio: float = 0.2
    """Share of hosts that are subdomains (``www.``, ``blog.``...) of another host's registered domain."""
    host_size_exponent: float = 0.9
    """Zipf exponent of the page count per host: a few large sites, many small ones."""
    page_fitness_exponent: float = 1.3
    """Pareto shape of each page's attractiveness; smaller means a heavier-tailed in-degree."""
    mean_out_links: float = 8.0
    """Mean number of links in a page's article body (navigation and footer links come on top)."""
    max_out_links: int = 60
    external_link_ratio: float = 0.2
    """Share of article links that point to another registered domain."""
    no_out_links_ratio: float = 0.05
    """Share of pages with no links at all (no navigation either)."""
    bad_link_page_ratio: float = 0.1
    """Share of pages that also carry unfetchable links (javascript:, mailto:, data:, malformed)."""
    nofollow_ratio: float = 0.02
    """Share of pages with ``<meta name="robots" content="nofollow">``."""
    noindex_ratio: float = 0.02
    exact_duplicate_ratio: float = 0.03
    """Share of pages whose HTML is byte-identical to another page of the same host."""
    near_duplicate_ratio: float = 0.03
    """Share of pages that copy another page's article with a few words changed."""
    near_duplicate_edits: int = 5
    paragraphs_median: int = 12
    paragraphs_range: tuple[int, int] = (7, 70)
    # robots.txt variants; each share is of all hosts and the variants are exclusive.
    robots_unavailable_ratio: float = 0.03
    """robots.txt answers 503: per RFC 9309 the whole host is disallowed."""
    robots_missing_ratio: float = 0.15
    """robots.txt answers 404: everything is allowed."""
    private_host_ratio: float = 0.15
    """Hosts whose robots.txt says ``Disallow: /private/`` (and that have pages there, linked)."""
    private_page_ratio: float = 0.08
    """Share of a private host's pages that live under ``/private/``."""
    crawl_delay_host_ratio: float = 0.1
    crawl_delay_values: tuple[float, ...] = (0.5, 1.0)
    latency_range: tuple[float, float] = (0.0, 0.0)
    """Per-host artificial response latency in seconds, drawn uniformly from this range."""
    # Hubs: list pages whose set of articles grows with time.
    hub_host_ratio: float = 0.1
    hubs_per_host: int = 1
    hub_rate_per_hour: float = 0.5
    """Mean rate of new articles per hub, before the hour and weekday patterns are applied."""
    hub_list_size: int = 50
    hub_hour_weights: tuple[float, ...] = DEFAULT_HOUR_WEIGHTS
    hub_weekday_weights: tuple[float, ...] = DEFAULT_WEEKDAY_WEIGHTS
    start_time: datetime = datetime(2026, 3, 2, tzinfo=UTC)
    """The web's reference instant: ground-truth queries default to it, and so does the command's clock."""
    hub_hour_shift_spread: int = 0
    """Each hub's daily cycle runs late (or early) by whole hours, drawn within +- this; 0 keeps hubs in step."""
    hub_bursts_per_week: float = 0.0
    """Bursts per hub and week (breaking news): episodes of many more articles than the rhythm says."""
    hub_burst_hours: tuple[float, float] = (0.5, 2.0)
    """Length of a burst in hours, drawn uniformly from this range."""
    hub_burst_factor: tuple[float, float] = (3.0, 6.0)
    """During a burst the hub publishes ``(factor - 1) * its base rate`` more articles per hour."""
    hub_backlog: timedelta = timedelta(days=2)
    """Articles already published at ``start_time``: those of this period before it."""
    hub_horizon: timedelta = timedelta(days=7)
    """No article appears later than ``start_time + hub_horizon``, so any crawl of the web is finite."""
    conditional_hosts_ratio: float = 1.0
    """Share of hosts that honour conditional requests (If-None-Match, If-Modified-Since) with a 304; the
    others ignore them and always answer in full. Every host sends ETag and Last-Modified."""
    page_edit_ratio: float = 0.0
    """Share of ordinary pages (not hubs) edited at each ``start_time + k * page_edit_interval`` (k >= 1),
    drawn anew for each k: an edited page gets a paragraph more, a new ETag and a new Last-Modified."""
    page_edit_interval: timedelta = timedelta(days=1)

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.pages < self.hosts:
            raise ValueError(f"need 1 <= hosts <= pages, got hosts={self.hosts} pages={self.pages}")
        ratios = {
            "subdomain_ratio": self.subdomain_ratio,
            "external_link_ratio": self.external_link_ratio,
            "no_out_links_ratio": self.no_out_links_ratio,
            "bad_link_page_ratio": self.bad_link_page_ratio,
            "nofollow_ratio": self.nofollow_ratio,
            "noindex_ratio": self.noindex_ratio,
            "exact_duplicate_ratio": self.exact_duplicate_ratio,
            "near_duplicate_ratio": self.near_duplicate_ratio,
            "private_page_ratio": self.private_page_ratio,
            "hub_host_ratio": self.hub_host_ratio,
            "conditional_hosts_ratio": self.conditional_hosts_ratio,
            "page_edit_ratio": self.page_edit_ratio,
        }
        for name, value in ratios.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        robots_total = (
            self.robots_unavailable_ratio
            + self.robots_missing_ratio
            + self.private_host_ratio
            + self.crawl_delay_host_ratio
        )
        if min(self.robots_unavailable_ratio, self.robots_missing_ratio, self.private_host_ratio,
               self.crawl_delay_host_ratio) < 0 or robots_total > 1.0:
            raise ValueError("robots variant shares must be >= 0 and sum to at most 1")
        if self.exact_duplicate_ratio + self.near_duplicate_ratio + self.no_out_links_ratio > 0.5:
            raise ValueError("duplicate and no-out-link shares together must stay at most 0.5")
        if len(self.hub_hour_weights) != 24 or len(self.hub_weekday_weights) != 7:
            raise ValueError("hub_hour_weights needs 24 values and hub_weekday_weights 7")
        if min(self.hub_hour_weights) < 0 or min(self.hub_weekday_weights) < 0:
            raise ValueError("hub rate weights must be >= 0")
        if self.start_time.tzinfo is None:
            raise ValueError("start_time must be timezone-aware (UTC)")
        if not self.crawl_delay_values or min(self.crawl_delay_values) <= 0:
            raise ValueError("crawl_delay_values needs at least one positive value")
        low, high = self.paragraphs_range
        if not 1 <= low <= self.paragraphs_median <= high:
            raise ValueError("need 1 <= paragraphs_range[0] <= paragraphs_median <= paragraphs_range[1]")
        if self.latency_range[0] < 0 or self.latency_range[1] < self.latency_range[0]:
            raise ValueError("latency_range must be (low, high) with 0 <= low <= high")
        if self.hub_hour_shift_spread < 0 or self.hub_bursts_per_week < 0:
            raise ValueError("hub_hour_shift_spread and hub_bursts_per_week must be >= 0")
        if not 0 < self.hub_burst_hours[0] <= self.hub_burst_hours[1] or not (
                1.0 <= self.hub_burst_factor[0] <= self.hub_burst_factor[1]):
            raise ValueError("hub_burst_hours needs 0 < low <= high, hub_burst_factor 1 <= low <= high")
        if self.hubs_per_host < 0 or self.hub_rate_per_hour < 0 or self.hub_list_size < 1:
            raise ValueError("hubs_per_host and hub_rate_per_hour must be >= 0, hub_list_size >= 1")
        if self.page_edit_interval <= timedelta(0):
            raise ValueError("page_edit_interval must be positive")
        if self.mean_out_links < 0 or self.max_out_links < 1 or self.near_duplicate_edits < 1:
            raise ValueError("mean_out_links >= 0, max_out_links >= 1, near_duplicate_edits >= 1 needed")
