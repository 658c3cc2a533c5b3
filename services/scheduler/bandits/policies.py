"""Site policies: which site to fetch the next page of, for a goal over a set of sites.

The paper's rules (seed 003, BeeBot) and the default it falls back on, plus one policy of
ours that needs no knowledge of the kind of sites:

- ``r1`` explore then commit: the first ``m`` pages of every site, in site order, then the
  rest of the budget on the site with the largest total (if it runs out of pages, the next).
- ``r2`` greedy by mean in batches (the paper's "Gittins index"): ``n`` pages per site, then
  repeatedly ``n`` more pages of the site with the highest mean reward.
- ``r3`` UCB1 with rewards normalised by the largest single-page reward seen: ``m`` pages per
  site, then one page of the site maximising ``mean / x_max + sqrt(2 ln n / t)``.
- ``quantum`` the paper's default without a goal: each site in turn gets ``q`` pages.
- ``recency`` greedy by a recency-weighted mean (weights ``decay**age`` over the site's own
  pages, so a site whose rich pages are behind it stops looking rich), with a logarithmic
  exploration floor: a site with fewer than ``a * ln(n + 1)**2`` pages (``n`` pages so far
  over all sites) is fetched first. The floor keeps exploring sites whose first pages are
  poor (they starve under ``r2``); the recency weights leave sites whose one rich page was
  an accident (they trap ``r1``). Its defaults (decay 0.98, floor 1.0) were chosen on the
  tuning families of ``trawl eval bandit --suite --tune`` (institutes and universities) and
  hold on the held-out ones (mixed and varied sets); see ``docs/evaluation.md``. A faster
  decay (0.9, the former default) leaves a site whose links sit on few but rich pages too early.

Every policy is a pure function of the :class:`Arm` snapshots (the scheduler rebuilds them
from its tables after a restart) and breaks ties by site order, so a replay is
deterministic. ``choose`` returns the index of an open site, or None when none is open.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from services.scheduler.bandits.arms import Arm

POLICY_NAMES: tuple[str, ...] = ("r1", "r2", "r3", "quantum", "recency")
RECENCY_DECAY = 0.98  # chosen on the tuning families (``trawl eval bandit --suite --tune``)
RECENCY_FLOOR = 1.0
FIXED_RULES: tuple[str, ...] = ("r1", "r2", "r3")


class SitePolicy(Protocol):
    """The one method the replay and the scheduler call, and the decay its Arm.recent_mean needs."""

    name: str
    recency_decay: float

    def choose(self, arms: Sequence[Arm]) -> int | None: ...


def _first_open_below(arms: Sequence[Arm], pages: float) -> int | None:
    for i, arm in enumerate(arms):
        if arm.open and arm.pulls < pages:
            return i
    return None


def _best_open(arms: Sequence[Arm], score: list[float]) -> int | None:
    best: int | None = None
    for i, arm in enumerate(arms):
        if arm.open and (best is None or score[i] > score[best]):
            best = i
    return best


class ExploreThenCommit:
    """R1: ``explore_pages`` pages of each site, then the site with the largest total."""

    name = "r1"
    recency_decay = 1.0

    def __init__(self, explore_pages: int) -> None:
        self.explore_pages = max(1, explore_pages)

    def choose(self, arms: Sequence[Arm]) -> int | None:
        exploring = _first_open_below(arms, self.explore_pages)
        if exploring is not None:
            return exploring
        return _best_open(arms, [arm.reward_sum for arm in arms])


class GreedyBatches:
    """R2: ``batch`` pages of each site, then batches on the site with the highest mean."""

    name = "r2"
    recency_decay = 1.0

    def __init__(self, batch: int) -> None:
        self.batch = max(1, batch)

    def choose(self, arms: Sequence[Arm]) -> int | None:
        first = _first_open_below(arms, self.batch)
        if first is not None:
            return first
        for i, arm in enumerate(arms):
            if arm.open and arm.pulls % self.batch:
                return i  # finish the batch in progress
        return _best_open(arms, [arm.mean for arm in arms])


class NormalisedUcb1:
    """R3: ``initial_pages`` pages of each site, then UCB1 on rewards divided by the largest page reward."""

    name = "r3"
    recency_decay = 1.0

    def __init__(self, initial_pages: int) -> None:
        self.initial_pages = max(1, initial_pages)

    def choose(self, arms: Sequence[Arm]) -> int | None:
        first = _first_open_below(arms, self.initial_pages)
        if first is not None:
            return first
        total = sum(arm.pulls for arm in arms)
        x_max = max((arm.reward_max for arm in arms), default=0.0) or 1.0
        bonus = 2.0 * math.log(max(total, 1))
        score = [arm.mean / x_max + math.sqrt(bonus / arm.pulls) if arm.pulls else math.inf for arm in arms]
        return _best_open(arms, score)


class TimeQuantum:
    """The paper's default: every site in turn gets ``quantum`` pages (equal time per page)."""

    name = "quantum"
    recency_decay = 1.0

    def __init__(self, quantum: int) -> None:
        self.quantum = max(1, quantum)

    def choose(self, arms: Sequence[Arm]) -> int | None:
        for i, arm in enumerate(arms):
            if arm.open and arm.pulls % self.quantum:
                return i  # finish the turn in progress
        return _best_open(arms, [-float(arm.pulls) for arm in arms])


class RecencyGreedy:
    """Ours: greedy by recency-weighted mean, with a ``floor * ln(n + 1)**2`` exploration floor per site."""

    name = "recency"

    def __init__(self, decay: float = RECENCY_DECAY, floor: float = RECENCY_FLOOR) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], not {decay}")
        self.recency_decay = decay
        self.floor = floor

    def choose(self, arms: Sequence[Arm]) -> int | None:
        total = sum(arm.pulls for arm in arms)
        floor = self.floor * math.log(total + 1) ** 2
        starved = [-float(arm.pulls) if arm.pulls < floor else -math.inf for arm in arms]
        pick = _best_open(arms, starved)
        if pick is not None and starved[pick] > -math.inf:
            return pick  # the least-fetched site under the floor
        best: int | None = None
        for i, arm in enumerate(arms):  # ties (sites whose last pages all had nothing) go to the larger mean
            if arm.open and (best is None or (arm.recent_mean, arm.mean) > (arms[best].recent_mean, arms[best].mean)):
                best = i
        return best


def explore_pages(budget: int, sites: int, step: int) -> int:
    """R1's pages per site: half the budget explores evenly (``step`` when there is no budget)."""
    if budget <= 0 or sites <= 0:
        return step
    return max(1, budget // (2 * sites))


def make_policy(name: str, *, budget: int, sites: int, step: int = 10) -> SitePolicy:
    """The policy called ``name`` with its default parameters for this budget and number of sites."""
    if name == "r1":
        return ExploreThenCommit(explore_pages(budget, sites, step))
    if name == "r2":
        return GreedyBatches(step)
    if name == "r3":
        return NormalisedUcb1(step)
    if name == "quantum":
        return TimeQuantum(step)
    if name == "recency":
        return RecencyGreedy()
    raise ValueError(f"unknown site policy {name!r}; known: {', '.join(POLICY_NAMES)}")
