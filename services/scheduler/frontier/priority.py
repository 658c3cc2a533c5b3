"""A URL's crawl priority in the frontier, from its importance and (for a page fetched before) freshness.

    priority = (w_importance * cash * change_probability + w_freshness * freshness_gain) * (1 - path_penalty)

``cash`` is the page's AOPIC cash as the importance service last announced it, so among
pages never fetched (``change_probability`` 1, ``freshness_gain`` 0) the frontier takes the
one with the most cash first: AOPIC's greedy policy. For a page fetched before, the freshness
plan's probability that it changed by its next fetch scales it down: fetching it again is
worth its importance times the chance that the fetch finds something new, which puts
refetches and first fetches on one scale (both are fetches of expected value). A hub's
refetch is worth more than the page itself: the new items it is expected to reveal
(``freshness_gain``, from its rate model), each valued ``w_freshness`` credits of cash. The
importance service shares 100 credits over the whole crawl, so with the default weights one
expected new item weighs as much as 1 % of all importance: a due hub goes before new pages of
its host, as a news crawler wants. ``path_penalty`` is the linkbase's trap signal.
"""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class PriorityWeights:
    importance: float = setting(
        "TRAWL_SCHEDULER_IMPORTANCE_WEIGHT", 1.0, "Weight of a page's AOPIC cash (times its change probability)."
    )
    freshness: float = setting(
        "TRAWL_SCHEDULER_FRESHNESS_WEIGHT",
        1.0,
        "Credits of cash one new item a hub's next fetch is expected to reveal is worth (100 credits in all).",
    )


# The formula in SQL over a frontier row's columns, for the statements that set it in place.
PRIORITY_SQL = (
    "(%(w_importance)s::float8 * {cash} * {change_probability} + %(w_freshness)s::float8 * {freshness_gain})"
    " * (1 - {path_penalty})"
)


def priority_sql(cash: str = "cash", change_probability: str = "change_probability",
                 freshness_gain: str = "freshness_gain", path_penalty: str = "path_penalty") -> str:
    """:data:`PRIORITY_SQL` over the given column expressions (parameters ``w_importance``, ``w_freshness``)."""
    return PRIORITY_SQL.format(cash=cash, change_probability=change_probability, freshness_gain=freshness_gain,
                               path_penalty=path_penalty)


def crawl_priority(cash: float, change_probability: float = 1.0, freshness_gain: float = 0.0,
                   weights: PriorityWeights | None = None) -> float:
    """The frontier priority of a URL (higher first), before the path penalty; see the module docstring."""
    if not 0.0 <= change_probability <= 1.0:
        raise ValueError(f"change_probability must be within [0, 1], got {change_probability}")
    w = weights or PriorityWeights()
    return w.importance * max(0.0, cash) * change_probability + w.freshness * max(0.0, freshness_gain)
