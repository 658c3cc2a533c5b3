"""The fetcher's robots.txt verdicts against Google's, crawler-commons', protego's and CPython's suites.

The cases are in ``tests/data/robots``; each goes through ``RobotsCache.allowed``
(``bench/robots_conformance.py`` says how). No verdict may be unsafe (fetching
what a suite disallows), Google's suite must agree on at least 99% of its cases,
and every disagreement must be listed in
``tests/data/robots/expected_disagreements.jsonl`` under a decision of
``docs/robots.md``: a new one, or a listed one that now agrees, fails here.
"""

from __future__ import annotations

import pytest

from bench.robots_conformance import (
    DECISIONS,
    SUITES,
    Outcome,
    evaluate,
    load_cases,
    load_expected_disagreements,
    load_source,
    summary,
)


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return evaluate(load_cases())


def test_every_suite_names_its_source_and_has_cases() -> None:
    for suite in SUITES:
        source = load_source(suite)
        assert {"repository", "path", "commit", "licence"} <= source.keys(), suite
    counts = {suite: len(load_cases([suite])) for suite in SUITES}
    assert counts["google_robotstxt"] >= 140 and sum(counts.values()) >= 1100, counts


def test_no_verdict_is_unsafe(outcomes: list[Outcome]) -> None:
    unsafe = [f"{o.case.key} {o.case.test}: agent {o.case.agent!r} url {o.case.url!r}" for o in outcomes if o.unsafe]
    assert not unsafe, "we would fetch what the suite disallows:\n" + "\n".join(unsafe)


def test_google_agreement_is_at_least_99_percent(outcomes: list[Outcome]) -> None:
    agree, cases, _ = summary(outcomes)["google_robotstxt"]
    assert agree / cases >= 0.99, f"{agree} of {cases}"


def test_every_disagreement_is_a_listed_decision(outcomes: list[Outcome]) -> None:
    listed = load_expected_disagreements()
    assert set(listed.values()) <= DECISIONS.keys()
    disagreeing = {o.case.key: o for o in outcomes if not o.agrees}
    new = [f"{key} {o.case.test}: agent {o.case.agent!r} url {o.case.url!r}: ours {o.got}, suite's {o.case.allowed}"
           for key, o in disagreeing.items() if key not in listed]
    assert not new, "disagreements no decision covers:\n" + "\n".join(new)
    now_agreeing = sorted(key for key in listed if key not in disagreeing)
    assert not now_agreeing, "listed disagreements that now agree (drop them from the list):\n" + "\n".join(
        now_agreeing
    )
