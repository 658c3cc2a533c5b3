"""Settings of the importance service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting
from services.importance.discovery import DiscoveryWeights
from services.importance.engine import OpicConfig

DAY = 86_400.0


@dataclass(frozen=True)
class ImportanceSettings:
    group_id: str = setting("TRAWL_IMPORTANCE_GROUP", "trawl-importance", "Consumer group of the importance service.")
    total_cash: float = setting(
        "TRAWL_IMPORTANCE_TOTAL_CASH", 100.0, "Cash in the whole system (OPIC's 100 credits), conserved."
    )
    follow_external: bool = setting(
        "TRAWL_IMPORTANCE_FOLLOW_EXTERNAL", True, "Whether cash flows over links to other sites."
    )
    virtual_share: float = setting(
        "TRAWL_IMPORTANCE_VIRTUAL_SHARE",
        0.05,
        "Share of a crawled page's cash that goes to the virtual page (all of it when the page has no"
        " followed out-link); the rest is shared equally by its out-links.",
    )
    virtual_to_all: float = setting(
        "TRAWL_IMPORTANCE_VIRTUAL_TO_ALL",
        0.0,
        "Where the virtual page's cash goes: this share to all known pages equally (accurate importance),"
        " the rest to pages not crawled yet by discovery weight (discovery). 0: only uncrawled pages;"
        " 1: all pages. With no uncrawled page left, all of it goes to all pages.",
    )
    window_days: float = setting(
        "TRAWL_IMPORTANCE_WINDOW_DAYS",
        120.0,
        "Sliding window T of AOPIC's history for a changing graph, in days (the 2003 paper's 4 months).",
    )
    home_weight: float = setting(
        "TRAWL_IMPORTANCE_HOME_WEIGHT", 1.0,
        "Discovery weight of a site's home page, times the other known pages of its site (see"
        " site_size_exponent): the in-links its navigation can bring.",
    )
    index_weight: float = setting(
        "TRAWL_IMPORTANCE_INDEX_WEIGHT", 1.0,
        "Discovery weight of a directory index page (path ending in /), times the other known pages of its site.",
    )
    page_weight: float = setting(
        "TRAWL_IMPORTANCE_PAGE_WEIGHT", 0.0,
        "Discovery weight of any other page (0: such a page gets no cash from the virtual page while home and"
        " index pages wait, only from its in-links; 1 with the other weights at 1: textbook AOPIC).",
    )
    site_size_exponent: float = setting(
        "TRAWL_IMPORTANCE_SITE_SIZE_EXPONENT", 1.0,
        "Exponent of the other known pages of the site (URLs of the host less the page) in the discovery weight"
        " of home and index pages; 0 with all three weights at 1: textbook AOPIC (equal shares).",
    )
    announce_growth: float = setting(
        "TRAWL_IMPORTANCE_ANNOUNCE_GROWTH", 0.25,
        "An uncrawled home or index page is announced to the scheduler again once its cash grew by this"
        " factor (1: doubled; 0.25: by a quarter) from dividends alone.",
    )
    announce_min_change: float = setting(
        "TRAWL_IMPORTANCE_ANNOUNCE_MIN_CHANGE", 1.0,
        "A page whose cash moved by at most this share since it was last announced is not announced again"
        " (its first announcement, and its visit, always are): fewer importance updates for pages that"
        " collect many small shares.",
    )
    replays_per_visit: float = setting(
        "TRAWL_IMPORTANCE_REPLAYS_PER_VISIT", 4.0,
        "Replays per crawled page applied: crawled pages (most cash first) pass their cash on again over the"
        " out-links of their last crawl, without a fetch, so the estimates converge between fetches"
        " (0: cash moves only when a page is crawled; each replay keeps the page's out-links in the state).",
    )
    internal_link_weight: float = setting(
        "TRAWL_IMPORTANCE_INTERNAL_LINK_WEIGHT", 0.1,
        "Weight of a link to a page of the same site (host and port) when a page's cash is shared over its"
        " out-links, against 1 for a link to another site (a page whose links are all of one kind shares"
        " equally): a site's navigation keeps less of the cash that enters it. 1: all links alike (OPIC).",
    )
    max_link_occurrences: int = setting(
        "TRAWL_IMPORTANCE_MAX_LINK_OCCURRENCES", 2,
        "A link the page carries several times (in the menu and again in the text, say) gets that many shares"
        " of the page's cash, up to this many (1: each linked URL one share, as OPIC). Bounds what a page"
        " repeating one link can give it.",
    )
    batch_size: int = setting(
        "TRAWL_IMPORTANCE_BATCH_SIZE", 5000,
        "Records consumed and committed together: larger batches mean fewer, larger changelog writes.",
    )
    snapshot_megabytes: int = setting(
        "TRAWL_IMPORTANCE_SNAPSHOT_MEGABYTES", 64,
        "A partition's state is snapshotted (and its changelog cleared) once the changelog holds this much.",
    )
    snapshot_idle_seconds: float = setting(
        "TRAWL_IMPORTANCE_SNAPSHOT_IDLE_SECONDS", 2.0,
        "A partition with changes is snapshotted after this long without new records (and its cash audited).",
    )

    def opic_config(self, partitions: int) -> OpicConfig:
        """The engine configuration these settings describe, for a state split into ``partitions``."""
        return OpicConfig(
            virtual_page=True,
            virtual_share=self.virtual_share,
            virtual_to_all=self.virtual_to_all,
            window_seconds=self.window_days * DAY,
            weights=DiscoveryWeights(self.home_weight, self.index_weight, self.site_size_exponent, self.page_weight),
            announce_growth=self.announce_growth,
            announce_min_change=self.announce_min_change,
            replays_per_visit=self.replays_per_visit,
            internal_link_weight=self.internal_link_weight,
            partitions=partitions,
        )
