"""Site policies: the paper's rules, the time quantum and the recency-weighted greedy, on hand-made arms."""

from __future__ import annotations

import math

import pytest

from services.scheduler.bandits.arms import Arm, ArmBook, recent_mean
from services.scheduler.bandits.policies import (
    ExploreThenCommit,
    GreedyBatches,
    NormalisedUcb1,
    RecencyGreedy,
    TimeQuantum,
    explore_pages,
    make_policy,
)


def arms(*pulls_and_sums: tuple[int, float], closed: tuple[int, ...] = ()) -> list[Arm]:
    return [
        Arm(f"s{i}", pulls=p, reward_sum=s, reward_max=s, recent_mean=s / p if p else 0.0, open=i not in closed)
        for i, (p, s) in enumerate(pulls_and_sums)
    ]


def test_r1_explores_each_site_in_order_then_commits_to_the_largest_total() -> None:
    r1 = ExploreThenCommit(explore_pages=3)
    assert r1.choose(arms((0, 0), (0, 0))) == 0
    assert r1.choose(arms((2, 5), (0, 0))) == 0
    assert r1.choose(arms((3, 5), (1, 9))) == 1
    assert r1.choose(arms((3, 5), (3, 9), (3, 1))) == 1
    assert r1.choose(arms((3, 5), (40, 90), (3, 1))) == 1  # committed for good
    assert r1.choose(arms((3, 5), (40, 90), (3, 1), closed=(1,))) == 0  # the best ran out: the next


def test_r2_finishes_batches_and_starves_a_site_with_nothing_in_its_first_batch() -> None:
    r2 = GreedyBatches(batch=2)
    assert r2.choose(arms((2, 1), (1, 0))) == 1
    assert r2.choose(arms((2, 1), (2, 0))) == 0  # mean 0.5 against 0
    assert r2.choose(arms((3, 1), (2, 0))) == 0  # the batch in progress
    assert r2.choose(arms((40, 1), (2, 0))) == 0  # 0.025 still beats 0: never back to site 1


def test_r3_is_ucb1_on_rewards_divided_by_the_largest_page_reward() -> None:
    r3 = NormalisedUcb1(initial_pages=1)
    assert r3.choose(arms((1, 2), (0, 0))) == 1
    book = [Arm("a", pulls=10, reward_sum=30, reward_max=20), Arm("b", pulls=2, reward_sum=2, reward_max=1)]
    n = 12

    def score(arm: Arm) -> float:
        return arm.mean / 20 + math.sqrt(2 * math.log(n) / arm.pulls)

    assert r3.choose(book) == (0 if score(book[0]) > score(book[1]) else 1) == 1


def test_the_quantum_gives_each_site_its_turn() -> None:
    quantum = TimeQuantum(quantum=2)
    order = []
    book = ArmBook(["a", "b", "c"])
    for _ in range(8):
        i = quantum.choose(book.arms)
        assert i is not None
        order.append(i)
        book.record(i, 1.0)
    assert order == [0, 0, 1, 1, 2, 2, 0, 0]


def test_recency_explores_up_to_its_floor_then_follows_the_recent_mean() -> None:
    policy = RecencyGreedy(decay=0.5, floor=0.5)
    # 6 pages so far: floor 0.5 * ln(7)^2 = 1.9, so a site with one page is still below it
    assert policy.choose(arms((5, 5), (1, 0))) == 1
    rich_then_poor = Arm("a", pulls=20, reward_sum=100, recent_mean=recent_mean([100] + [0] * 8, 0.5))
    steady = Arm("b", pulls=20, reward_sum=20, recent_mean=1.0)
    assert policy.choose([rich_then_poor, steady]) == 1  # its mean (5.0) is still higher: the recent one is not
    assert GreedyBatches(batch=1).choose([rich_then_poor, steady]) == 0
    assert policy.choose([Arm("a", open=False), Arm("b", open=False)]) is None


def test_recent_mean_weights_by_age() -> None:
    assert recent_mean([], 0.9) == 0.0
    assert recent_mean([4.0], 0.9) == 4.0
    assert recent_mean([0.0, 2.0], 0.5) == pytest.approx(2.0 / 1.5)
    assert recent_mean([3.0, 1.0], 1.0) == 2.0


def test_arm_book_keeps_pulls_sums_maxima_and_the_recent_mean() -> None:
    book = ArmBook(["a", "b"], decay=0.5)
    for reward in (4.0, 0.0, 2.0):
        book.record(0, reward)
    a = book.arms[0]
    assert (a.pulls, a.reward_sum, a.reward_max, a.mean) == (3, 6.0, 4.0, 2.0)
    assert a.recent_mean == pytest.approx(recent_mean([4.0, 0.0, 2.0], 0.5))
    book.close(1)
    assert not book.arms[1].open and book.arms[1].pulls == 0
    with pytest.raises(ValueError):
        ArmBook(["a"], decay=0.0)


def test_every_policy_returns_none_when_no_site_is_open() -> None:
    closed = arms((5, 1), (5, 2), closed=(0, 1))
    for name in ("r1", "r2", "r3", "quantum", "recency"):
        assert make_policy(name, budget=100, sites=2).choose(closed) is None


def test_defaults_and_unknown_names() -> None:
    assert explore_pages(2000, 10, step=10) == 100  # half the budget explores evenly
    assert explore_pages(0, 10, step=7) == 7
    r1 = make_policy("r1", budget=2000, sites=10)
    assert isinstance(r1, ExploreThenCommit) and r1.explore_pages == 100
    r2 = make_policy("r2", budget=2000, sites=10, step=5)
    assert isinstance(r2, GreedyBatches) and r2.batch == 5
    with pytest.raises(ValueError, match="known: r1, r2, r3, quantum, recency"):
        make_policy("gittins", budget=1, sites=1)
