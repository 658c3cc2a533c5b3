"""The appearance rule and the CSV history format."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.scheduler.freshness.history import (
    HistoryFileError,
    Sighting,
    appearance_time,
    appearances,
    format_instant,
    parse_instant,
    read_history_csv,
    times_by_key,
    write_history_csv,
)

T = 1772409600.0  # 2026-03-02T00:00:00Z


def test_publish_date_wins() -> None:
    assert appearance_time(Sighting("http://a.test/x/1", published_at=T + 5, previous_fetch_at=T,
                                    fetched_at=T + 600)) == T + 5


def test_midpoint_under_an_hour_else_unknown() -> None:
    assert appearance_time(Sighting("http://a.test/x/1", previous_fetch_at=T, fetched_at=T + 600)) == T + 300
    assert appearance_time(Sighting("http://a.test/x/1", previous_fetch_at=T, fetched_at=T + 3600)) is None
    assert appearance_time(Sighting("http://a.test/x/1", previous_fetch_at=None, fetched_at=T + 60)) is None
    assert appearance_time(Sighting("http://a.test/x/1")) is None


def test_appearances_in_window_keyed_by_section_earliest_per_child() -> None:
    rows = [
        Sighting("http://a.test/news/1", "http://a.test/news/", published_at=T + 10),
        Sighting("http://a.test/news/1", "http://b.test/", published_at=None, previous_fetch_at=T, fetched_at=T + 100),
        Sighting("http://a.test/news/2", "http://a.test/news/", previous_fetch_at=T + 100, fetched_at=T + 300),
        Sighting("http://a.test/about", None, published_at=T - 10_000),  # before the window
    ]
    found = appearances(rows, T, T + 3600)
    assert [(a.key, a.at, a.parent_url) for a in found] == [
        ("a.test/news", T + 10, "http://a.test/news/"),
        ("a.test/news", T + 200, "http://a.test/news/"),
    ]
    assert times_by_key(found) == {"a.test/news": [T + 10, T + 200]}


def test_csv_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    write_history_csv(path, [("a.test/news", T + 60), ("b.test", T), ("a.test/news", T + 30)])
    assert path.read_text().splitlines()[:2] == ["key,published_at", "b.test,2026-03-02T00:00:00Z"]
    assert read_history_csv(path) == {"a.test/news": [T + 30, T + 60], "b.test": [T]}
    assert parse_instant("2026-03-02T01:00:00+01:00") == T
    assert parse_instant("2026-03-02T00:00:00") == T
    assert format_instant(T) == "2026-03-02T00:00:00Z"


@pytest.mark.parametrize("text", ["key,when\na,2026-03-02T00:00:00Z\n", "key,published_at\na,yesterday\n",
                                  "key,published_at\n,2026-03-02T00:00:00Z\n"])
def test_bad_files_say_where(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(HistoryFileError):
        read_history_csv(path)


def test_a_bare_date_is_no_appearance_time() -> None:
    midnight = T  # 2026-03-02T00:00:00Z: a page that declared the day only
    assert appearance_time(Sighting("http://a.test/x/1", published_at=midnight)) is None
    assert appearance_time(Sighting("http://a.test/x/1", published_at=midnight, previous_fetch_at=T + 100,
                                    fetched_at=T + 700)) == T + 400
