"""The live half of a crawl goal: which of the goal's sites the dispatcher may fetch now.

When a goal is set (``TRAWL_SCHEDULER_BANDIT_POLICY``), its sites are the arms of a bandit.
Each dispatch round the allocator rebuilds the arms from the scheduler's tables (pages
fetched and in flight, the goal's rewards, the last page rewards for the recency mean,
whether the site has queued URLs) and lets the policy make up to ``parallel`` choices in a
row, as if each chosen page were already fetched with the site's mean reward. The sites
chosen may be dispatched this round (politeness still decides when); the goal's other sites
are held back. Once the budget is spent (pages fetched plus in flight), all are held.
Hosts outside the goal are never held: they are dispatched as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from libs.common.settings import SettingsError
from services.scheduler.bandits.arms import Arm, recent_mean, recent_pages
from services.scheduler.bandits.policies import POLICY_NAMES, RECENCY_DECAY, SitePolicy, make_policy

# A page's reward: 1 if fetched; the URLs first discovered on it; the external links it carries.
GOALS: tuple[str, ...] = ("documents", "new_urls", "external_links")
RECENT_PAGES = recent_pages(RECENCY_DECAY)  # page rewards the recency mean reads (older ones weigh under 3%)


@dataclass(frozen=True)
class ArmState:
    """One goal site as the scheduler's tables describe it."""

    site: str
    pulls: int  # pages whose fetch ended (fetched, failed, blocked or skipped)
    in_flight: int
    reward_sum: float
    reward_max: float
    recent: tuple[float, ...]  # rewards of its last pages, oldest first
    has_work: bool  # it has queued URLs


class BanditAllocator:
    def __init__(self, policy: SitePolicy, sites: Sequence[str], goal: str, budget: int, parallel: int) -> None:
        if goal not in GOALS:
            raise SettingsError(f"unknown crawl goal {goal!r}; known: {', '.join(GOALS)}")
        if not sites:
            raise SettingsError("a crawl goal needs its sites (TRAWL_SCHEDULER_BANDIT_SITES)")
        self.policy = policy
        self.sites: tuple[str, ...] = tuple(dict.fromkeys(sites))
        self.goal = goal
        self.budget = budget
        self.parallel = max(1, parallel)

    def _arms(self, states: Sequence[ArmState]) -> list[Arm]:
        by_site = {s.site: s for s in states}
        arms = []
        for site in self.sites:
            state = by_site.get(site)
            if state is None:
                arms.append(Arm(site, open=False))
                continue
            pulls = state.pulls + state.in_flight
            mean = state.reward_sum / state.pulls if state.pulls else 0.0
            arms.append(
                Arm(
                    site,
                    pulls=pulls,
                    reward_sum=state.reward_sum + mean * state.in_flight,  # pages in flight count at the mean
                    reward_max=state.reward_max,
                    recent_mean=recent_mean(state.recent, self.policy.recency_decay),
                    open=state.has_work,
                )
            )
        return arms

    def spent(self, states: Sequence[ArmState]) -> int:
        return sum(s.pulls + s.in_flight for s in states if s.site in self.sites)

    def allowed(self, states: Sequence[ArmState]) -> list[str]:
        """The goal's sites the dispatcher may fetch this round, in the order the policy chose them."""
        choices = self.parallel
        if self.budget > 0:
            choices = min(choices, self.budget - self.spent(states))
        arms = self._arms(states)
        chosen: list[str] = []
        for _ in range(max(0, choices)):
            index = self.policy.choose(arms)
            if index is None:
                break
            arm = arms[index]
            if arm.site not in chosen:
                chosen.append(arm.site)
            arms[index] = replace(arm, pulls=arm.pulls + 1, reward_sum=arm.reward_sum + arm.mean)
        return chosen

    def held(self, states: Sequence[ArmState]) -> list[str]:
        """The goal's sites the dispatcher must not fetch this round."""
        allowed = set(self.allowed(states))
        return [site for site in self.sites if site not in allowed]


def allocator_from_settings(
    policy: str, sites: Sequence[str], goal: str, budget: int, step: int, parallel: int
) -> BanditAllocator | None:
    """The allocator the settings describe, or None when no goal is set (empty policy)."""
    if not policy:
        return None
    if policy not in POLICY_NAMES:
        raise SettingsError(
            f"unknown site policy {policy!r} (TRAWL_SCHEDULER_BANDIT_POLICY); known: {', '.join(POLICY_NAMES)}"
        )
    unique = tuple(dict.fromkeys(sites))
    chosen = make_policy(policy, budget=budget, sites=len(unique), step=step)
    return BanditAllocator(chosen, unique, goal, budget, parallel)
