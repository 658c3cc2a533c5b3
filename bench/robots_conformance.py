"""robots.txt verdicts of the fetcher against other projects' test suites.

Run ``.venv/bin/python -m bench.robots_conformance`` (add ``-v`` to list every
disagreement). The cases are in ``tests/data/robots/<suite>.jsonl``: a first
line naming the source (repository, path, commit, licence), then one line per
robots.txt with its checks (user agent, URL, the suite's verdict). Every case
goes through :class:`services.fetcher.robots.robots.RobotsCache`, the fetcher's own
path: the robots.txt answered with status 200, our user-agent token set to the
case's user agent, and ``RobotsCache.allowed(url)`` asked. A URL given as a path
(a path, or an empty reference) is resolved against ``http://example.com/``.

A case *agrees* when our verdict is the suite's. A disagreement is *unsafe*
when we would fetch what the suite disallows, and *safe* otherwise. Each
disagreement must be listed in ``tests/data/robots/expected_disagreements.jsonl``
under one of the decisions below (docs/robots.md explains them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from services.fetcher.clock import FakeClock
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.robots.robots_rules import RobotsRules

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "robots"
SUITES = ("google_robotstxt", "crawler_commons", "protego", "cpython")
PATH_ORIGIN = "http://example.com"

DECISIONS = {
    "literal-url": "Google's reading matches the URL as given (the caller percent-encodes it): a raw character"
    " or a decoded escape in the URL does not match a pattern written the other way",
    "google-agent-name": "Google's reading of a user-agent line keeps its leading letters, '-' and '_' only"
    " (Agent1 is 'agent', UnicödeBöt is 'unic'), so it does not name us",
    "agent-line-words": "each word of a user-agent line may name an agent ('Mozilla/5.0 (compatible;"
    " Butterfly/1.0)' names butterfly)",
    "agent-exact": "Google's reading takes only the group named exactly by our name, not one named by a prefix",
    "one-token": "the suite's crawler answers to several names at once; ours has one token, each of whose"
    " names must be allowed",
    "group-continues": "only allow and disallow lines end a group's list of user agents (RFC 9309, Google):"
    " an unknown line between two user-agent lines does not",
    "merge-groups": "all groups naming the same agent are merged (RFC 9309), not only the first",
    "decoded-reserved": "CPython's reading decodes percent-encoded reserved characters in a path (%2F is '/')",
}


@dataclass(frozen=True)
class Case:
    suite: str
    key: str
    """``<suite>/<line>.<check>``: the line of the data file and the check's place on it."""
    test: str
    robots: str
    agent: str
    url: str
    allowed: bool

    @property
    def body(self) -> bytes:
        """The robots.txt as bytes (bytes that are not UTF-8 are kept as lone surrogates in the data)."""
        return self.robots.encode("utf-8", "surrogateescape")

    @property
    def absolute_url(self) -> str:
        """The URL, a reference (a path, or empty) resolved against ``http://example.com/``."""
        if self.url.startswith("/") and not self.url.startswith("//"):
            return PATH_ORIGIN + self.url  # urljoin would drop an empty fragment ("/page#")
        return urljoin(PATH_ORIGIN + "/", self.url)


@dataclass(frozen=True)
class Outcome:
    case: Case
    got: bool

    @property
    def agrees(self) -> bool:
        return self.got == self.case.allowed

    @property
    def unsafe(self) -> bool:
        return self.got and not self.case.allowed


def load_source(suite: str) -> dict[str, str]:
    with (DATA / f"{suite}.jsonl").open(encoding="utf-8") as lines:
        source: dict[str, str] = json.loads(next(lines))["source"]
    return source


def load_suite(suite: str) -> list[Case]:
    cases: list[Case] = []
    with (DATA / f"{suite}.jsonl").open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            row = json.loads(line)
            if "source" in row:
                continue
            for index, check in enumerate(row["checks"]):
                agent = check["agent"]
                cases.append(Case(
                    suite, f"{suite}/{number}.{index}", row["test"], row["robots"],
                    agent if isinstance(agent, str) else " ".join(agent), check["url"], check["allowed"],
                ))
    return cases


def load_cases(suites: Iterable[str] = SUITES) -> list[Case]:
    return [case for suite in suites for case in load_suite(suite)]


def load_expected_disagreements() -> dict[str, str]:
    """Listed disagreements: case key -> decision."""
    listed: dict[str, str] = {}
    with (DATA / "expected_disagreements.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if "key" in row:
                listed[row["key"]] = row["decision"]
    return listed


async def _verdict(case: Case) -> bool:
    body = case.body

    async def fetch(url: str) -> HttpResponse:
        return HttpResponse(url=url, final_url=url, status=200, body=body)

    cache = RobotsCache(fetch, user_agent_token=case.agent, clock=FakeClock())
    return await cache.allowed(case.absolute_url)


def evaluate(cases: Iterable[Case]) -> list[Outcome]:
    async def run() -> list[Outcome]:
        return [Outcome(case, await _verdict(case)) for case in cases]

    return asyncio.run(run())


def summary(outcomes: Iterable[Outcome]) -> dict[str, tuple[int, int, int]]:
    """Per suite and ``all``: (agreeing, cases, unsafe)."""
    counts: dict[str, list[int]] = {}
    for outcome in outcomes:
        for name in (outcome.case.suite, "all"):
            row = counts.setdefault(name, [0, 0, 0])
            row[0] += outcome.agrees
            row[1] += 1
            row[2] += outcome.unsafe
    return {name: (row[0], row[1], row[2]) for name, row in counts.items()}


def timing(cases: list[Case], rounds: int = 5) -> tuple[float, float]:
    """Microseconds per parse of a case's file, and per ``allowed()`` of its URL (best of ``rounds``)."""
    parsed = [(RobotsRules.parse(case.body, case.agent), case.absolute_url) for case in cases]
    parse = min(_seconds(lambda: [RobotsRules.parse(case.body, case.agent) for case in cases]) for _ in range(rounds))
    allowed = min(_seconds(lambda: [rules.allowed(url) for rules, url in parsed]) for _ in range(rounds))
    return 1e6 * parse / len(cases), 1e6 * allowed / len(cases)


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every disagreement")
    parser.add_argument("--timing", action="store_true", help="also time parsing and allowed() over the cases")
    args = parser.parse_args()
    outcomes = evaluate(load_cases())
    listed = load_expected_disagreements()
    print(f"{'suite':<18} {'cases':>6} {'agree':>6} {'%':>7} {'unsafe':>7}")
    for name, (agree, cases, unsafe) in summary(outcomes).items():
        print(f"{name:<18} {cases:>6} {agree:>6} {100 * agree / cases:>6.1f}% {unsafe:>7}")
    disagreeing = [o for o in outcomes if not o.agrees]
    unlisted = [o for o in disagreeing if o.case.key not in listed]
    print(f"disagreements: {len(disagreeing)}, each a listed decision: {not unlisted}")
    if args.timing:
        parse_us, allowed_us = timing(load_cases())
        print(f"RobotsRules.parse: {parse_us:.0f} us per file; RobotsRules.allowed: {allowed_us:.2f} us per URL")
    if args.verbose:
        for outcome in disagreeing:
            case = outcome.case
            print(f"{case.key} [{listed.get(case.key, 'UNLISTED')}] {case.test}: agent {case.agent!r}"
                  f" url {case.url!r}: ours {outcome.got}, suite's {case.allowed}")


if __name__ == "__main__":
    main()
