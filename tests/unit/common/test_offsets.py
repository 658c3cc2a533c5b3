"""Commit positions when records of a partition finish out of order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from libs.common.kafka.offsets import PartitionOffsets


def _tracking(*offsets: int) -> PartitionOffsets:
    tracker = PartitionOffsets()
    for offset in offsets:
        tracker.add(offset)
    return tracker


def test_nothing_to_commit_before_anything_finished() -> None:
    tracker = _tracking(10, 11, 12)
    assert tracker.commit_position() is None
    assert tracker.in_flight == 3


def test_a_later_record_finishing_first_does_not_move_the_position() -> None:
    tracker = _tracking(10, 11, 12)
    tracker.done(12)
    assert tracker.commit_position() is None
    tracker.done(11)
    assert tracker.commit_position() is None
    assert tracker.in_flight == 3


def test_the_oldest_record_finishing_releases_everything_done_behind_it() -> None:
    tracker = _tracking(10, 11, 12, 13)
    tracker.done(12)
    tracker.done(10)
    assert tracker.commit_position() == 11
    assert tracker.in_flight == 3
    tracker.done(11)
    assert tracker.commit_position() == 13
    assert tracker.in_flight == 1
    tracker.done(13)
    assert tracker.commit_position() == 14
    assert tracker.in_flight == 0


def test_the_position_is_kept_when_new_records_arrive() -> None:
    tracker = _tracking(0)
    tracker.done(0)
    tracker.add(1)
    tracker.add(2)
    assert tracker.commit_position() == 1
    tracker.done(2)
    assert tracker.commit_position() == 1
    tracker.done(1)
    assert tracker.commit_position() == 3


def test_gaps_in_offsets_are_skipped() -> None:
    """Compacted topics and transaction markers leave holes: the position follows the last done offset."""
    tracker = _tracking(5, 9, 20)
    tracker.done(9)
    tracker.done(5)
    assert tracker.commit_position() == 10
    tracker.done(20)
    assert tracker.commit_position() == 21


@given(st.permutations(list(range(30))))
def test_position_is_one_past_the_longest_finished_prefix(order: list[int]) -> None:
    tracker = _tracking(*range(100, 130))
    finished: set[int] = set()
    for offset in order:
        tracker.done(100 + offset)
        finished.add(offset)
        prefix = 0
        while prefix in finished:
            prefix += 1
        expected = None if prefix == 0 else 100 + prefix
        assert tracker.commit_position() == expected
        assert tracker.in_flight == 30 - prefix
