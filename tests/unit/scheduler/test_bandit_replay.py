"""The offline replay of a budgeted crawl: site files, budget, exhausted sites, determinism."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.scheduler.bandits.policies import POLICY_NAMES, TimeQuantum, make_policy
from services.scheduler.bandits.replay import (
    SiteFileError,
    SiteRewards,
    dump_site_rewards,
    load_site_rewards,
    parse_site_rewards,
    replay,
)


def test_site_files_round_trip(tmp_path: Path) -> None:
    sites = [SiteRewards("a.example", (0.0, 3.0, 1.5)), SiteRewards("b.example", ())]
    path = tmp_path / "sites.jsonl"
    dump_site_rewards(sites, path)
    assert path.read_text().splitlines()[0] == '{"site":"a.example","rewards":[0,3,1.5]}'
    assert load_site_rewards(path) == sites


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["not json"], "line 1: not JSON"),
        (['{"rewards": [1]}'], 'line 1: expected {"site"'),
        (['{"site": "a", "rewards": [1, -2]}'], "rewards must be a list of numbers >= 0"),
        (['{"site": "a", "rewards": [true]}'], "rewards must be a list of numbers >= 0"),
        (['{"site": "a", "rewards": [1]}', "", '{"site": "a", "rewards": [2]}'], "line 3: site 'a' appears twice"),
        (["", "  "], "no sites"),
    ],
)
def test_bad_site_files_say_where(lines: list[str], message: str) -> None:
    with pytest.raises(SiteFileError, match=message.replace("[", r"\[").replace("{", r"\{")):
        parse_site_rewards(lines)


def test_the_budget_and_the_sites_pages_bound_the_crawl() -> None:
    sites = [SiteRewards("a", (1.0, 1.0)), SiteRewards("b", (5.0,) * 10), SiteRewards("c", ())]
    result = replay(TimeQuantum(quantum=1), sites, budget=6)
    assert result.pages == 6
    assert result.pages_by_site == {"a": 2, "b": 4, "c": 0}
    assert result.reward == 2 + 4 * 5
    assert result.reward_by_site == {"a": 2.0, "b": 20.0, "c": 0.0}
    everything = replay(TimeQuantum(quantum=1), sites, budget=100)
    assert everything.pages == 12 and everything.reward == 52


def test_every_policy_is_deterministic_and_spends_the_whole_budget() -> None:
    sites = [SiteRewards(f"s{i}", tuple(float((i * j) % 7) for j in range(300))) for i in range(5)]
    for name in POLICY_NAMES:
        first = replay(make_policy(name, budget=500, sites=5), sites, 500)
        again = replay(make_policy(name, budget=500, sites=5), sites, 500)
        assert first == again
        assert first.pages == 500 and sum(first.pages_by_site.values()) == 500
