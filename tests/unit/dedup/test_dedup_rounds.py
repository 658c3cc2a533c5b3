"""Cutting a batch's claims into runs with unique URLs."""

from __future__ import annotations

from services.dedup.handler import claim_rounds
from services.dedup.index import Claim


def test_one_round_when_urls_are_unique() -> None:
    claims = [Claim("http://a.test/", "x"), Claim("http://b.test/", "x"), Claim("http://c.test/", "y")]
    assert claim_rounds(claims) == [claims]


def test_a_repeated_url_starts_a_new_round_in_order() -> None:
    a_old, b, a_new = Claim("http://a.test/", "x"), Claim("http://b.test/", "x"), Claim("http://a.test/", "y")
    assert claim_rounds([a_old, b, a_new]) == [[a_old, b], [a_new]]


def test_identical_claims_are_made_once() -> None:
    claim = Claim("http://a.test/", "x")
    assert claim_rounds([claim, claim]) == [[claim]]


def test_no_claims_no_rounds() -> None:
    assert claim_rounds([]) == []
