"""Which link targets need no merge: only those whose stored row the link cannot improve."""

from __future__ import annotations

from services.linkbase.known_targets import KnownTargets
from services.linkbase.rows import TargetRow, resolve

SOURCE = resolve("http://a.test/")
TARGET = resolve("http://a.test/t")


def _target(depth: int | None, followable: bool = True) -> TargetRow:
    return TargetRow(TARGET, depth, SOURCE, followable)


def test_unknown_targets_are_merged() -> None:
    assert not KnownTargets().unchanged(_target(1))


def test_a_deeper_or_equal_link_to_a_stored_target_changes_nothing() -> None:
    known = KnownTargets()
    known.remember([_target(2)])
    assert known.unchanged(_target(2)) and known.unchanged(_target(7)) and known.unchanged(_target(None))
    assert not known.unchanged(_target(1))


def test_a_first_followable_link_or_a_first_depth_is_merged() -> None:
    known = KnownTargets()
    known.remember([_target(3, followable=False)])
    assert known.unchanged(_target(4, followable=False))
    assert not known.unchanged(_target(4, followable=True))
    unknown_depth = KnownTargets()
    unknown_depth.remember([_target(None)])
    assert not unknown_depth.unchanged(_target(9))


def test_remembered_bounds_only_improve() -> None:
    known = KnownTargets()
    known.remember([_target(1, followable=True)])
    known.remember([_target(5, followable=False)])  # a later, weaker merge does not loosen the bound
    assert known.unchanged(_target(1, followable=True))


def test_memory_is_bounded_by_two_generations() -> None:
    known = KnownTargets(capacity=10)
    known.remember(TargetRow(resolve(f"http://a.test/{i}"), 1, SOURCE, True) for i in range(100))
    assert len(known) <= 10
    assert known.unchanged(TargetRow(resolve("http://a.test/99"), 1, SOURCE, True))


def test_changing_keeps_exactly_the_targets_not_known_unchanged() -> None:
    refs = [resolve(f"http://a.test/{n}") for n in range(8)]
    stored = [TargetRow(ref, n % 3, SOURCE, n % 2 == 0) for n, ref in enumerate(refs[:5])]
    probes = [TargetRow(ref, depth, SOURCE, followable) for ref in refs for depth in (None, 0, 1, 2, 3)
              for followable in (False, True)]
    known, small = KnownTargets(), KnownTargets(capacity=6)  # small: entries move between generations, some go
    known.remember(stored)
    small.remember(stored)
    expected = [t for t in probes if not known.unchanged(t)]
    assert known.changing(probes) == expected and len(expected) < len(probes)
    kept = small.changing(probes)
    assert all(t in kept for t in expected)  # forgetting only ever merges more
    assert KnownTargets().changing(probes) == probes
