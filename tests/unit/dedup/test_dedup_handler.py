"""The handler's URL fingerprints: read back from the verdict key, equal to the URL's own fingerprint."""

from __future__ import annotations

import pytest

from libs.common.urls import url_fingerprint, url_key
from services.dedup.handler import key_fingerprint

URLS = [f"http://h{i}.test/section/{i * 7919}/article.html?ref={i % 3}" for i in range(200)]


def test_both_signs_of_fingerprint_are_covered() -> None:
    signs = {url_fingerprint(url) < 0 for url in URLS}
    assert signs == {True, False}


@pytest.mark.parametrize("url", URLS)
def test_the_key_spells_the_url_fingerprint(url: str) -> None:
    assert key_fingerprint(url_key(url)) == url_fingerprint(url)


@pytest.mark.parametrize(("key", "fingerprint"), [("0000000000000000", 0), ("7fffffffffffffff", 2**63 - 1),
                                                  ("8000000000000000", -(2**63)), ("ffffffffffffffff", -1)])
def test_the_edges_of_the_signed_range(key: str, fingerprint: int) -> None:
    assert key_fingerprint(key) == fingerprint
