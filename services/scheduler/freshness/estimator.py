"""The change rate of a page without a model: Cho and Garcia-Molina's estimator.

A crawler sees a page only when it visits: ``X`` of ``n`` visits found it changed, but a
visit that found a change cannot tell one change from five. The naive ``X / n`` changes per
interval is biased low (it saturates at 1), and ``-ln(1 - X / n)`` is infinite when every
visit saw a change. Cho and Garcia-Molina ("Estimating frequency of change", 2003) give
the estimator, nearly unbiased under this incomplete observation::

    r = -ln((n - X + 0.5) / (n + 0.5))     changes per visit interval

and the rate ``r / I`` for a mean interval ``I``. For a hub, a "change" is a visit that found
at least one new item, and for Poisson items ``P(change in I) = 1 - exp(-rate * I)``, so the
estimate is the item rate itself. For other pages a change is a new content fingerprint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class VisitHistory:
    """``visits`` intervals between consecutive visits, ``changes`` of them ended in a change, ``span`` seconds."""

    visits: int = 0
    changes: int = 0
    span: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.changes <= self.visits or self.span < 0:
            raise ValueError(f"need 0 <= changes <= visits and span >= 0, got {self}")

    def add(self, interval: float, changed: bool) -> VisitHistory:
        return VisitHistory(self.visits + 1, self.changes + int(changed), self.span + max(0.0, interval))


def changes_per_interval(visits: int, changes: int) -> float:
    """``r = -ln((n - X + 0.5) / (n + 0.5))``; 0 with no visits."""
    if visits <= 0:
        return 0.0
    return -math.log((visits - changes + 0.5) / (visits + 0.5))


def change_rate(history: VisitHistory) -> float | None:
    """Estimated changes per second, or ``None`` while there is nothing to estimate from."""
    if history.visits <= 0 or history.span <= 0:
        return None
    return changes_per_interval(history.visits, history.changes) / (history.span / history.visits)


def history_of_versions(fetched_at: Sequence[float], fingerprints: Sequence[str]) -> VisitHistory:
    """The visit history of a page from its versions (fetch times and content fingerprints, oldest first)."""
    history = VisitHistory()
    for i in range(1, min(len(fetched_at), len(fingerprints))):
        history = history.add(fetched_at[i] - fetched_at[i - 1], fingerprints[i] != fingerprints[i - 1])
    return history
