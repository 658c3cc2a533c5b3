"""What a site policy sees of each site (an arm of the bandit), and the statistics behind it.

A crawl goal turns every site of a set into an arm: fetching one page of a site is one pull,
and the page's reward is the goal's count on it (its external links, the new URLs found on
it, 1 for a document). Policies only read :class:`Arm` snapshots; :class:`ArmBook` keeps them
up to date one page at a time (the offline replay), and :func:`recent_mean` computes the
recency statistic from a site's last :func:`recent_pages` rewards, in the replay as in the
scheduler (which reads them from its stored page rewards), so both see the same numbers.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Arm:
    """One site as a policy sees it."""

    site: str
    pulls: int = 0  # pages of the site fetched (or in flight) so far
    reward_sum: float = 0.0
    reward_max: float = 0.0  # the largest reward of a single page
    recent_mean: float = 0.0  # mean reward with weights decay**age (the policy's decay); 0 before any page
    open: bool = True  # the site still has pages to fetch

    @property
    def mean(self) -> float:
        return self.reward_sum / self.pulls if self.pulls else 0.0


def recent_pages(decay: float, weight: float = 0.03) -> int:
    """How many of a site's last page rewards the recency mean reads: older pages weigh under ``weight``."""
    if decay >= 1.0:
        return 1_000_000
    return max(1, math.ceil(math.log(weight) / math.log(decay)))


def recent_mean(rewards: Sequence[float], decay: float) -> float:
    """Mean of ``rewards`` (oldest first) weighted by ``decay`` to the power of each one's age."""
    total = weight = 0.0
    for reward in rewards:
        total = total * decay + reward
        weight = weight * decay + 1.0
    return total / weight if weight else 0.0


class ArmBook:
    """Statistics of a set of sites, updated page by page; ``arms`` is what a policy reads."""

    def __init__(self, sites: Sequence[str], decay: float = 1.0) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], not {decay}")
        self._decay = decay
        window = recent_pages(decay)
        self._recent: list[deque[float]] = [deque(maxlen=window) for _ in sites]
        self.arms: list[Arm] = [Arm(site) for site in sites]

    def record(self, index: int, reward: float) -> None:
        """One more page of site ``index``, with its reward."""
        arm = self.arms[index]
        self._recent[index].append(reward)
        self.arms[index] = replace(
            arm,
            pulls=arm.pulls + 1,
            reward_sum=arm.reward_sum + reward,
            reward_max=max(arm.reward_max, reward),
            recent_mean=recent_mean(self._recent[index], self._decay),
        )

    def close(self, index: int) -> None:
        """Site ``index`` has no page left."""
        self.arms[index] = replace(self.arms[index], open=False)
