"""How often Trawl's URL normaliser agrees with other projects' URL test suites.

The cases live in ``tests/data/urls/<suite>.jsonl`` (first line: where they come from;
then one case a line: ``input``, ``base`` and either ``expected`` or ``failure``). A case
**agrees** when ``normalize_url(input, base)`` and ``normalize_url(expected)`` are the same
URL, or, for a ``failure`` case, when ``normalize_url(input, base)`` refuses the input. A
case where both sides are refused does not agree: the suite says the URL is valid.

Every disagreement is one of the decisions of ``docs/urls.md``: the rows of
``tests/data/urls/expected_disagreements.jsonl`` name the case and the decision, and
``tests/unit/common/test_url_conformance.py`` fails on a disagreement not listed there or a
listed one that now agrees.

    .venv/bin/python -m bench.url_conformance [--list] [--json]

Prints the agreement per suite and overall; ``--list`` also prints every disagreement
with what each side normalised to and the decision it falls under.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libs.common.urls import DEFAULT_POLICY, InvalidUrl, normalize_url

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "urls"
SUITES = ("whatwg", "rfc3986", "crawler_commons", "w3lib", "url_normalize")
DISAGREEMENTS = DATA / "expected_disagreements.jsonl"

DECISIONS: dict[str, str] = {
    "query-not-sorted": "the query keeps its order: sorting is a policy (TRAWL_URL_SORT_QUERY), off by default",
    "repeated-names-order": "sorting, when on, is by name and stable: the order of a repeated name's values "
    "may matter (?id=2&id=1)",
    "query-form-encoding": "the query's pieces are kept as written: '+' and '%20' stay apart, no '=' is added "
    "to or taken from a bare name, a piece with an empty name stays",
    "reserved-escapes-kept": "an escaped reserved character ('%2C', '%28') stays escaped and a literal one stays "
    "literal: the two spellings may name different resources",
    "query-characters": "'[' and ']' stay literal in the query, as browsers send them",
    "path-characters": "'[' and ']' stay literal in the path, as browsers send them",
    "double-slashes": "'//' in the path is kept: servers may map it to another resource",
    "same-scheme-reference": "'http:g' against an http base is relative to the base, as browsers read it "
    "(RFC 3986 5.4.2 allows it for backward compatibility)",
    "no-default-scheme": "a reference without a scheme needs a base: no scheme or host is guessed",
    "hostless": "an http(s) URL without a host is refused",
    "port-zero": "port 0 cannot be connected to: refused",
    "bad-host": "a host DNS cannot look up is refused: empty labels, labels over 63 octets, "
    "characters outside letters, digits, '-' and '_', an empty punycode label",
    "userinfo-brackets": "'[' or ']' in the user information is refused as malformed (RFC 3986 forbids them)",
    "userinfo-kept": "user information is kept: it is part of the request",
    "unicode-path-query": "escaped bytes are kept as they are: no Unicode normalisation, "
    "no replacement of invalid UTF-8",
    "escaped-fragment": "no '#!' to '_escaped_fragment_' rewrite: the AJAX crawling scheme is retired",
}


@dataclass(frozen=True)
class Case:
    suite: str
    input: str
    base: str | None
    expected: str | None  # None: the suite says the input is not a valid URL
    note: str

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.suite, self.input, self.base)


@dataclass(frozen=True)
class Outcome:
    case: Case
    got: str | None  # normalize_url(input, base), or "!reason" when refused
    want: str | None  # normalize_url(expected), or "!reason" when refused; None for a failure case

    @property
    def agrees(self) -> bool:
        if self.case.expected is None:
            return self.got is not None and self.got.startswith("!")
        return self.got is not None and not self.got.startswith("!") and self.got == self.want


def load_suite(suite: str) -> tuple[dict[str, Any], list[Case]]:
    """The source (first line) and the cases of ``tests/data/urls/<suite>.jsonl``."""
    lines = (DATA / f"{suite}.jsonl").read_text(encoding="utf-8").splitlines()
    source = json.loads(lines[0])["source"]
    cases = []
    for line in lines[1:]:
        row = json.loads(line)
        expected = None if row.get("failure") else row["expected"]
        cases.append(Case(suite, row["input"], row["base"], expected, row.get("note") or ""))
    return source, cases


def load_cases() -> list[Case]:
    return [case for suite in SUITES for case in load_suite(suite)[1]]


def load_expected_disagreements() -> dict[tuple[str, str, str | None], str]:
    """(suite, input, base) -> decision, from ``expected_disagreements.jsonl``."""
    listed: dict[tuple[str, str, str | None], str] = {}
    for line in DISAGREEMENTS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "source" in row:
            continue
        listed[(row["suite"], row["input"], row["base"])] = row["decision"]
    return listed


def _normalise(url: str, base: str | None = None) -> str:
    try:
        return normalize_url(url, base, DEFAULT_POLICY)
    except InvalidUrl as exc:
        return "!" + exc.reason


def evaluate(cases: list[Case]) -> list[Outcome]:
    return [
        Outcome(case, _normalise(case.input, case.base), None if case.expected is None else _normalise(case.expected))
        for case in cases
    ]


def summary(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    """suite -> (agreeing cases, cases), and "all"."""
    total: Counter[str] = Counter()
    agree: Counter[str] = Counter()
    for outcome in outcomes:
        for name in (outcome.case.suite, "all"):
            total[name] += 1
            agree[name] += outcome.agrees
    return {name: (agree[name], total[name]) for name in (*SUITES, "all")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every disagreement")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    outcomes = evaluate(load_cases())
    figures = summary(outcomes)
    listed = load_expected_disagreements()
    if args.json:
        print(json.dumps({name: {"agree": a, "cases": n, "rate": a / n} for name, (a, n) in figures.items()}))
    else:
        print(f"{'suite':<16} {'agree':>6} {'cases':>6} {'rate':>7}")
        for name, (a, n) in figures.items():
            print(f"{name:<16} {a:>6} {n:>6} {a / n:>7.1%}")
        by_decision = Counter(listed.get(o.case.key, "UNLISTED") for o in outcomes if not o.agrees)
        print("disagreements by decision: " + ", ".join(f"{d} {c}" for d, c in by_decision.most_common()))
    if args.list:
        for o in outcomes:
            if not o.agrees:
                decision = listed.get(o.case.key, "UNLISTED")
                print(f"[{o.case.suite}] {decision}: {o.case.input!r} base={o.case.base!r}")
                print(
                    f"    got  {o.got}\n    want {o.want if o.case.expected is not None else 'failure'}"
                    f" (expected {o.case.expected!r})"
                )


if __name__ == "__main__":
    main()
