"""A URL's crawl priority in the frontier, from its importance and (for a page fetched before) freshness.

    priority = cash * change_probability

``cash`` is the page's AOPIC cash as the importance service last announced it, so among
pages never fetched (``change_probability`` 1) the frontier takes the one with the most
cash first: AOPIC's greedy policy. For a page fetched before, the freshness model's
probability that it changed since that fetch scales it down: fetching it again is worth
its importance times the chance that the fetch finds something new, which puts
refetches and first fetches on one scale (both are fetches of expected value).
"""

from __future__ import annotations


def crawl_priority(cash: float, change_probability: float = 1.0) -> float:
    """The frontier priority of a URL (higher first); see the module docstring."""
    if not 0.0 <= change_probability <= 1.0:
        raise ValueError(f"change_probability must be within [0, 1], got {change_probability}")
    return max(0.0, cash) * change_probability
