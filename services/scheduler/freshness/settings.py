"""Settings of the scheduler's freshness models and revisit policies (``TRAWL_FRESHNESS_*``).

Durations are in seconds of the scheduler's clock (``services.scheduler.clock``), which is
real time except in tests and demos that run it accelerated.
"""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting
from services.scheduler.freshness.bursts import BurstSettings
from services.scheduler.freshness.model import ForestSettings
from services.scheduler.freshness.policy import IntervalBounds


@dataclass(frozen=True)
class FreshnessSettings:
    window_days: float = setting(
        "TRAWL_FRESHNESS_WINDOW_DAYS", 30.0, "Days of appearance history a model is trained on (sliding window)."
    )
    min_samples: int = setting(
        "TRAWL_FRESHNESS_MIN_SAMPLES",
        1000,
        "Items a key (host + first path segment) needs in the window for its own model; smaller keys fold into"
        " their host's key, and a host still below it gets no model.",
    )
    retrain_interval: float = setting(
        "TRAWL_FRESHNESS_RETRAIN_INTERVAL", 21600.0, "Seconds between two trainings of all models."
    )
    hub_interval: float = setting(
        "TRAWL_FRESHNESS_HUB_INTERVAL",
        280.0,
        "The fetch budget of hub pages: one fetch per this many seconds per hub on average, spread over"
        " hubs and hours to minimise the delay of new items.",
    )
    hub_min_items: int = setting(
        "TRAWL_FRESHNESS_HUB_MIN_ITEMS",
        10,
        "A page that revealed at least this many new items in the window is a hub (scheduled by its key's model).",
    )
    min_interval: float = setting(
        "TRAWL_FRESHNESS_MIN_INTERVAL", 2.0, "Shortest time between two fetches of one page (politeness comes on top)."
    )
    max_interval: float = setting("TRAWL_FRESHNESS_MAX_INTERVAL", 21600.0, "Longest time between two hub fetches.")
    first_interval: float = setting(
        "TRAWL_FRESHNESS_FIRST_INTERVAL", 86400.0, "First revisit of a page with no change history yet."
    )
    page_max_interval: float = setting(
        "TRAWL_FRESHNESS_PAGE_MAX_INTERVAL", 30 * 86400.0, "Longest time between two fetches of a page that is no hub."
    )
    page_changes_per_visit: float = setting(
        "TRAWL_FRESHNESS_PAGE_CHANGES_PER_VISIT",
        1.0,
        "A page that is no hub is revisited when this many changes are expected since the last visit.",
    )
    burst_sigmas: float = setting(
        "TRAWL_FRESHNESS_BURST_SIGMAS", 3.0, "A fetch is a burst when it finds this many Poisson deviations more."
    )
    burst_min_items: int = setting("TRAWL_FRESHNESS_BURST_MIN_ITEMS", 3, "Fewest new items that can make a burst.")
    burst_half_life: float = setting(
        "TRAWL_FRESHNESS_BURST_HALF_LIFE", 1800.0, "Seconds in which a burst boost loses half its excess."
    )
    burst_max_boost: float = setting("TRAWL_FRESHNESS_BURST_MAX_BOOST", 20.0, "Largest burst boost of a rate curve.")
    trees: int = setting("TRAWL_FRESHNESS_TREES", 100, "Trees of each random forest.")
    min_samples_leaf: int = setting("TRAWL_FRESHNESS_MIN_SAMPLES_LEAF", 2, "Fewest hours in a leaf of a tree.")
    max_features: float = setting(
        "TRAWL_FRESHNESS_MAX_FEATURES", 0.5, "Share of the 31 features each split of a tree may choose from."
    )
    rate_floor: float = setting(
        "TRAWL_FRESHNESS_RATE_FLOOR",
        0.05,
        "Predicted hourly rates below this share of the key's mean rate are raised to it (an hour seen empty in"
        " four weeks is not known to stay empty).",
    )
    seed: int = setting("TRAWL_FRESHNESS_SEED", 0, "Random seed of the forests (training is reproducible).")
    keep_generations: int = setting(
        "TRAWL_FRESHNESS_KEEP_GENERATIONS", 3, "Model generations kept in the database (the current one included)."
    )
    poll_seconds: float = setting(
        "TRAWL_FRESHNESS_POLL_SECONDS", 5.0, "Real seconds between two checks for a new model generation."
    )

    @property
    def bounds(self) -> IntervalBounds:
        return IntervalBounds(self.min_interval, self.max_interval)

    @property
    def page_bounds(self) -> IntervalBounds:
        return IntervalBounds(self.min_interval, max(self.min_interval, self.page_max_interval))

    @property
    def bursts(self) -> BurstSettings:
        return BurstSettings(self.burst_sigmas, self.burst_min_items, self.burst_half_life, self.burst_max_boost)

    @property
    def forest(self) -> ForestSettings:
        return ForestSettings(self.trees, self.min_samples_leaf, self.max_features, self.seed, self.rate_floor)
