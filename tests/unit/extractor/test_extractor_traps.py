"""Spider-trap rules on single URLs: each rule, its limits, and what must never be caught."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libs.common.urls import InvalidUrl, normalize_url
from services.extractor.traps import TRAP_RULES, TrapRules

RULES = TrapRules()
YEAR = 2026


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://h.test/" + "a" * 1100, "url_length"),
        ("http://h.test/" + "/".join(f"s{i}" for i in range(17)), "path_depth"),
        ("http://h.test/a/b/a/b/a/b/page.html", "repeated_segments"),
        ("http://h.test/foo/foo/foo/", "repeated_segments"),
        ("http://h.test/en/news/en/news/", "repeated_segments"),
        ("http://h.test/x/Images/images/IMAGES/", "repeated_segments"),
        ("http://h.test/calendar/2031/05/", "calendar"),
        ("http://h.test/events/1987-03-01/", "calendar"),
        ("http://h.test/calendar?month=2035-01", "calendar"),
        ("http://h.test/cal.php?year=2040&month=3", "calendar"),
        ("http://h.test/cal.php?y=1900&m=1", "calendar"),
        ("http://h.test/(S(lit3py55t21z5v55vlm25s55))/default.aspx", "session_id"),
        ("http://h.test/shop?session=a8f5f167f44f4964e6c998dee827110c", "session_id"),
        ("http://h.test/shop?ps_session=1f3870be274f6c49b3e31a0c6728957f&p=2", "session_id"),
        ("http://h.test/app;sess_id=9e107d9d372bb6826bd81d3542a419d6/home", "session_id"),
        ("http://h.test/forum?cftoken=1234abcd5678efgh9012", "session_id"),
    ],
)
def test_rules_catch_traps(url: str, rule: str) -> None:
    assert RULES.check(url, year=YEAR) == rule


@pytest.mark.parametrize(
    "url",
    [
        "http://h.test/",
        "http://h.test/news/2026/03/05/river-levels-rise.html",
        "http://h.test/archive/2001/09/",
        "http://h.test/2027/12/preview",
        "http://h.test/news/news/",  # twice is allowed: some sites do name a section after itself
        "http://h.test/a/b/c/a/d/",
        "http://h.test/products/2500-ml-bottle",  # a number that is no year-and-month
        "http://h.test/item/1800-555-0199",
        "http://h.test/search?s=a8f5f167f44f4964e6c998dee827110c",  # "s" is a search, not a session
        "http://h.test/quiz?assessment=a8f5f167f44f4964e6c998dee827110c",
        "http://h.test/article/0b8f4e5c-6d1a-4c1f-9b2e-3f7a1d2c4b5e",  # ids in paths are content
        "http://h.test/list?page=2&sort=date&session=short",
        "http://h.test/" + "/".join(f"s{i}" for i in range(16)),
        "http://h.test/" + "a" * 1000,
    ],
)
def test_rules_leave_ordinary_urls_alone(url: str) -> None:
    assert RULES.check(url, year=YEAR) == ""


def test_calendar_window_moves_with_the_fetch_year() -> None:
    url = "http://h.test/calendar/2031/05/"
    assert RULES.check(url, year=2026) == "calendar"
    assert RULES.check(url, year=2030) == ""
    assert TrapRules(calendar_future_years=10).check(url, year=2026) == ""


def test_link_depth_is_off_by_default_and_counts_hops() -> None:
    url = "http://h.test/page"
    assert RULES.check(url, year=YEAR, link_depth=500) == ""
    limited = TrapRules(max_link_depth=5)
    assert limited.check(url, year=YEAR, link_depth=5) == ""
    assert limited.check(url, year=YEAR, link_depth=6) == "link_depth"


def test_rules_can_be_chosen_and_unknown_names_are_refused() -> None:
    only_length = TrapRules(enabled=("url_length",))
    assert only_length.check("http://h.test/a/a/a/a", year=YEAR) == ""
    assert TrapRules(enabled=()).check("http://h.test/" + "a" * 5000, year=YEAR) == ""
    with pytest.raises(ValueError, match="unknown trap rule"):
        TrapRules(enabled=("url_length", "moon_phase"))
    assert set(TRAP_RULES) == {"url_length", "path_depth", "repeated_segments", "calendar", "session_id", "link_depth"}


def test_custom_limits() -> None:
    rules = TrapRules(max_url_length=40, max_path_depth=3, max_segment_repeats=1)
    assert rules.check("http://h.test/" + "x" * 40, year=YEAR) == "url_length"
    assert rules.check("http://h.test/a/b/c/d", year=YEAR) == "path_depth"
    assert rules.check("http://h.test/a/b/a", year=YEAR) == "repeated_segments"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_normalised_url_gets_a_verdict_without_raising(raw: str) -> None:
    try:
        url = normalize_url(raw, "http://base.test/dir/")
    except InvalidUrl:
        return
    assert RULES.check(url, year=YEAR) in ("", *TRAP_RULES)
