"""Offline replay of a budgeted crawl over a set of sites, with any site policy.

A site file holds one JSON object per line: ``{"site": "<name>", "rewards": [r1, r2, ...]}``,
the reward of each page in the order a breadth-first crawl of that site fetches them. The
replay asks the policy for a site, "fetches" that site's next page (its next reward), and
stops when the budget is spent or every site is exhausted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.scheduler.bandits.arms import ArmBook
from services.scheduler.bandits.policies import SitePolicy


class SiteFileError(ValueError):
    """A site file that cannot be read as the replay expects."""


@dataclass(frozen=True)
class SiteRewards:
    site: str
    rewards: tuple[float, ...]


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    reward: float
    pages: int
    pages_by_site: dict[str, int]
    reward_by_site: dict[str, float]


def _parse_line(line: str, number: int) -> SiteRewards:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SiteFileError(f"line {number}: not JSON ({exc.msg})") from exc
    if not isinstance(row, dict) or not isinstance(row.get("site"), str) or not row["site"]:
        raise SiteFileError(f'line {number}: expected {{"site": "<name>", "rewards": [...]}}')
    rewards = row.get("rewards")
    if not isinstance(rewards, list) or not all(
        isinstance(r, int | float) and not isinstance(r, bool) and r >= 0 for r in rewards
    ):
        raise SiteFileError(f"line {number}: rewards must be a list of numbers >= 0")
    return SiteRewards(row["site"], tuple(float(r) for r in rewards))


def parse_site_rewards(lines: Iterable[str]) -> list[SiteRewards]:
    sites: list[SiteRewards] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        site = _parse_line(line, number)
        if site.site in seen:
            raise SiteFileError(f"line {number}: site {site.site!r} appears twice")
        seen.add(site.site)
        sites.append(site)
    if not sites:
        raise SiteFileError("no sites")
    return sites


def load_site_rewards(path: Path) -> list[SiteRewards]:
    with path.open(encoding="utf-8") as f:
        return parse_site_rewards(f)


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def dump_site_rewards(sites: Sequence[SiteRewards], path: Path) -> None:
    """Writes ``sites`` as a site file (one compact JSON object per line)."""
    with path.open("w", encoding="utf-8") as f:
        for site in sites:
            row = {"site": site.site, "rewards": [_number(r) for r in site.rewards]}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")


def replay(policy: SitePolicy, sites: Sequence[SiteRewards], budget: int) -> ReplayResult:
    """Spends up to ``budget`` pages over ``sites`` as ``policy`` chooses."""
    book = ArmBook([s.site for s in sites], policy.recency_decay)
    for i, site in enumerate(sites):
        if not site.rewards:
            book.close(i)
    gained = [0.0] * len(sites)
    pages = 0
    while pages < budget:
        index = policy.choose(book.arms)
        if index is None:
            break
        if not book.arms[index].open:
            raise RuntimeError(f"policy {policy.name} chose {sites[index].site}, which has no page left")
        site = sites[index]
        pulls = book.arms[index].pulls
        reward = site.rewards[pulls]
        book.record(index, reward)
        gained[index] += reward
        pages += 1
        if pulls + 1 >= len(site.rewards):
            book.close(index)
    return ReplayResult(
        policy=policy.name,
        reward=sum(gained),
        pages=pages,
        pages_by_site={arm.site: arm.pulls for arm in book.arms},
        reward_by_site={s.site: gained[i] for i, s in enumerate(sites)},
    )
