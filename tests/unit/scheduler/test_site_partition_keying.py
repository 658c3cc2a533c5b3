"""Fetch request keys of large hosts: host#group by path, plans refreshed from queued URL counts."""

from __future__ import annotations

from collections.abc import Mapping

from services.scheduler.site_partition.keying import LargeHostKeys, fetch_key
from services.scheduler.site_partition.planner import tail_group


def test_fetch_key_uses_the_plan_then_the_path_hash() -> None:
    assignment = {"big.example/news": 1, "big.example": 0}
    assert fetch_key("big.example", "http://big.example/news/1.html", 2, assignment) == "big.example#1"
    assert fetch_key("big.example", "http://big.example/index.html", 2, assignment) == "big.example#0"
    tail = tail_group("big.example/misc", 3)
    assert fetch_key("big.example", "http://big.example/misc/a", 3, {}) == f"big.example#{tail}"


class Counts:
    """Queued URLs per first path segment, as the frontier would answer; counts each question."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.asked: list[str] = []

    async def __call__(self, host: str) -> Mapping[str, int]:
        self.asked.append(host)
        return self.counts


async def test_plans_balance_the_queued_urls_and_are_refreshed_when_old() -> None:
    now = [100.0]
    keys = LargeHostKeys(["big.example"], 2, refresh_seconds=60.0, clock=lambda: now[0])
    counts = Counts({"news": 50, "sport": 30, "arts": 15, "": 5})
    assert keys.key_for("small.example", "http://small.example/news/1") == "small.example"
    await keys.refresh(counts)
    assert keys.assignment("big.example") == {"big.example/news": 0, "big.example/sport": 1, "big.example/arts": 1}
    assert keys.key_for("big.example", "http://big.example/sport/9") == "big.example#1"
    await keys.refresh(counts)
    assert counts.asked == ["big.example"]  # fresh enough
    now[0] += 61.0
    counts.counts = {"sport": 80, "news": 20}
    await keys.refresh(counts)
    assert keys.key_for("big.example", "http://big.example/sport/9") == "big.example#0"


def test_one_group_is_no_split() -> None:
    keys = LargeHostKeys(["big.example"], 1, refresh_seconds=60.0)
    assert keys.hosts == frozenset()
    assert keys.key_for("big.example", "http://big.example/news/1") == "big.example"
