"""Robots directives: the meta tag's content and the X-Robots-Tag header."""

from __future__ import annotations

import pytest

from services.extractor.robots_meta import RobotsDirectives, parse_robots_directives, parse_x_robots_tag


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("noindex", (True, False)),
        ("NOINDEX, NOFOLLOW", (True, True)),
        ("none", (True, True)),
        ("all", (False, False)),
        ("noarchive, nosnippet", (False, False)),
        ("unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow", (False, True)),
        ("max-snippet: 20, noindex", (True, False)),
        ("googlebot: noindex, nofollow", (False, False)),
        ("googlebot: noindex, trawl: nofollow", (False, True)),
        ("Trawl: none", (True, True)),
        ("", (False, False)),
    ],
)
def test_x_robots_tag(value: str, expected: tuple[bool, bool]) -> None:
    assert parse_x_robots_tag(value) == expected


def test_robots_directive_parser() -> None:
    assert parse_robots_directives(" noindex ,follow") == (True, False)
    assert parse_robots_directives("NONE").nofollow is True


def test_directives_combine() -> None:
    assert RobotsDirectives(True, False) | RobotsDirectives(False, True) == RobotsDirectives(True, True)
    assert RobotsDirectives(False, False) | RobotsDirectives(False, False) == RobotsDirectives(False, False)
