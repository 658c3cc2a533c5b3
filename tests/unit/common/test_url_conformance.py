"""The URL normaliser against other projects' suites (WHATWG, RFC 3986, crawler-commons, w3lib, url-normalize).

The cases are in ``tests/data/urls``; what agreement means is in ``bench/url_conformance.py``.
Every disagreement must be listed in ``tests/data/urls/expected_disagreements.jsonl`` under
one of the decisions of ``docs/urls.md``; a new disagreement, or a listed one that now
agrees, fails here, so a change to the normal form is always a deliberate one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.url_conformance import (
    DATA,
    DECISIONS,
    SUITES,
    Outcome,
    evaluate,
    load_cases,
    load_expected_disagreements,
    load_suite,
    summary,
)
from libs.common.urls import InvalidUrl, UrlPolicy, normalize_url


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return evaluate(load_cases())


def test_agreement_is_at_least_90_percent(outcomes: list[Outcome]) -> None:
    agree, cases = summary(outcomes)["all"]
    assert cases > 700
    assert agree / cases >= 0.90, f"{agree} of {cases}"


def test_every_disagreement_is_a_listed_decision(outcomes: list[Outcome]) -> None:
    listed = load_expected_disagreements()
    disagreeing = {o.case.key: o for o in outcomes if not o.agrees}
    new = [
        f"{o.case.key}: got {o.got}, suite's {o.case.expected or 'failure'} is {o.want}"
        for key, o in disagreeing.items()
        if key not in listed
    ]
    assert not new, "disagreements no decision covers:\n" + "\n".join(new)
    now_agreeing = sorted(str(key) for key in listed if key not in disagreeing)
    assert not now_agreeing, "listed disagreements that now agree (drop them from the list):\n" + "\n".join(
        now_agreeing
    )


def test_every_decision_is_used_and_documented() -> None:
    used = set(load_expected_disagreements().values())
    assert used <= set(DECISIONS), used - set(DECISIONS)
    assert set(DECISIONS) <= used, f"decisions no case needs: {set(DECISIONS) - used}"
    doc = (Path(__file__).resolve().parents[3] / "docs" / "urls.md").read_text(encoding="utf-8")
    assert [code for code in DECISIONS if f"`{code}`" not in doc] == []


def test_unsorted_queries_agree_once_sorting_is_on() -> None:
    """The ``query-not-sorted`` decision is the sorting policy and nothing else."""
    policy = UrlPolicy(sort_query=True)
    cases = {case.key: case for case in load_cases()}
    unsorted = [key for key, decision in load_expected_disagreements().items() if decision == "query-not-sorted"]
    assert unsorted
    for key in unsorted:
        case = cases[key]
        assert case.expected is not None
        assert normalize_url(case.input, case.base, policy) == normalize_url(case.expected, policy=policy), key


def test_refusals_are_invalid_url(outcomes: list[Outcome]) -> None:
    """A refusal is an :class:`InvalidUrl` with a reason, never another exception."""
    refused = [o for o in outcomes if o.got is not None and o.got.startswith("!")]
    assert refused
    for outcome in refused[:50]:
        with pytest.raises(InvalidUrl):
            normalize_url(outcome.case.input, outcome.case.base)


@pytest.mark.parametrize("suite", SUITES)
def test_each_suite_names_its_source(suite: str) -> None:
    source, cases = load_suite(suite)
    assert {"suite", "repository", "path", "commit", "licence", "selection"} <= set(source)
    assert cases
    assert (DATA / f"{suite}.jsonl").is_file()
