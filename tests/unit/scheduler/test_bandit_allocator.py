"""The crawl goal's allocator: which of the goal's sites the dispatcher may fetch this round."""

from __future__ import annotations

import pytest

from libs.common.settings import SettingsError
from services.scheduler.bandits import arm_store
from services.scheduler.bandits.allocator import GOALS, ArmState, BanditAllocator, allocator_from_settings
from services.scheduler.bandits.policies import ExploreThenCommit, GreedyBatches, TimeQuantum

SITES = ("a.example", "b.example", "c.example")


def state(site: str, pulls: int = 0, in_flight: int = 0, reward: float = 0.0, work: bool = True) -> ArmState:
    return ArmState(site, pulls, in_flight, reward, reward, (), work)


def test_one_choice_a_round_is_the_paper_s_one_page_at_a_time() -> None:
    allocator = BanditAllocator(GreedyBatches(batch=2), SITES, "documents", budget=0, parallel=1)
    states = [state("a.example", 2, reward=2), state("b.example", 1), state("c.example")]
    assert allocator.allowed(states) == ["b.example"]  # b's first batch is not finished
    assert allocator.held(states) == ["a.example", "c.example"]


def test_pages_in_flight_count_as_pulls() -> None:
    allocator = BanditAllocator(GreedyBatches(batch=2), SITES, "documents", budget=0, parallel=1)
    states = [state("a.example", 2, reward=2), state("b.example", 1, in_flight=1), state("c.example")]
    assert allocator.allowed(states) == ["c.example"]


def test_several_choices_a_round_allow_several_sites() -> None:
    allocator = BanditAllocator(TimeQuantum(quantum=1), SITES, "documents", budget=0, parallel=2)
    assert allocator.allowed([state(s) for s in SITES]) == ["a.example", "b.example"]
    repeat = BanditAllocator(ExploreThenCommit(explore_pages=1), SITES, "documents", budget=0, parallel=3)
    committed = [state("a.example", 1, reward=1), state("b.example", 1, reward=5), state("c.example", 1)]
    assert repeat.allowed(committed) == ["b.example"]  # three choices, one site


def test_sites_without_queued_urls_are_not_chosen() -> None:
    allocator = BanditAllocator(TimeQuantum(quantum=1), SITES, "documents", budget=0, parallel=1)
    assert allocator.allowed([state("a.example", work=False), state("b.example"), state("c.example")]) == ["b.example"]
    assert allocator.allowed([state("b.example")]) == ["b.example"]  # a and c unknown yet: closed


def test_a_spent_budget_holds_every_goal_site() -> None:
    allocator = BanditAllocator(TimeQuantum(quantum=1), SITES, "new_urls", budget=10, parallel=4)
    states = [state("a.example", 4), state("b.example", 3, in_flight=1), state("c.example", 1)]
    assert allocator.spent(states) == 9
    assert allocator.allowed(states) == ["c.example"]  # one page left
    states[2] = state("c.example", 2)
    assert allocator.held(states) == list(SITES)


def test_settings() -> None:
    assert allocator_from_settings("", SITES, "documents", 0, 10, 4) is None
    built = allocator_from_settings("r1", [*SITES, "a.example"], "new_urls", 600, 10, 2)
    assert built is not None and built.sites == SITES and built.parallel == 2
    assert isinstance(built.policy, ExploreThenCommit) and built.policy.explore_pages == 100
    with pytest.raises(SettingsError, match="TRAWL_SCHEDULER_BANDIT_POLICY"):
        allocator_from_settings("ucb2", SITES, "documents", 0, 10, 4)
    with pytest.raises(SettingsError, match="unknown crawl goal"):
        allocator_from_settings("r2", SITES, "links", 0, 10, 4)
    with pytest.raises(SettingsError, match="TRAWL_SCHEDULER_BANDIT_SITES"):
        allocator_from_settings("r2", (), "documents", 0, 10, 4)


def test_every_goal_reads_its_own_reward_from_the_tables() -> None:
    assert set(GOALS) == {"documents", "new_urls", "external_links"} == set(arm_store.REWARD_COLUMNS)
    built = allocator_from_settings("r2", SITES, "external_links", 0, 10, 4)
    assert built is not None and built.goal == "external_links"


def test_the_scheduler_and_the_replay_see_the_same_arms() -> None:
    """The allocator rebuilds a site's arm from its stored last page rewards exactly as the replay's book keeps it."""
    from services.scheduler.bandits.allocator import RECENT_PAGES, ArmState, allocator_from_settings
    from services.scheduler.bandits.arms import ArmBook, recent_pages
    from services.scheduler.bandits.policies import RECENCY_DECAY, RecencyGreedy, make_policy

    allocator = allocator_from_settings("recency", ["a.test"], "external_links", 500, 10, 1)
    assert allocator is not None and isinstance(allocator.policy, RecencyGreedy)
    evaluated = make_policy("recency", budget=500, sites=1)
    assert isinstance(evaluated, RecencyGreedy)
    assert (allocator.policy.recency_decay, allocator.policy.floor) == (evaluated.recency_decay, evaluated.floor)
    assert RECENT_PAGES == recent_pages(RECENCY_DECAY) == recent_pages(evaluated.recency_decay)
    rewards = [float((i * 7) % 13 == 0) * (i % 40) for i in range(400)]
    book = ArmBook(["a.test"], evaluated.recency_decay)
    for reward in rewards:
        book.record(0, reward)
    state = ArmState("a.test", pulls=len(rewards), in_flight=0, reward_sum=sum(rewards), reward_max=max(rewards),
                     recent=tuple(rewards[-RECENT_PAGES:]), has_work=True)
    assert allocator._arms([state]) == book.arms
