"""The per-path duplicate share that becomes a priority penalty."""

from __future__ import annotations

from services.linkbase.trap_signal import TrapPolicy

POLICY = TrapPolicy(min_judged=10, duplicate_share=0.5, penalty=0.9)


def test_a_path_where_most_judged_pages_are_duplicates_is_penalised() -> None:
    assert POLICY.penalty_for(judged=10, duplicates=6) == 0.9
    assert POLICY.penalty_for(judged=100, duplicates=99) == 0.9


def test_half_or_fewer_duplicates_or_too_few_judged_pages_carry_no_penalty() -> None:
    assert POLICY.penalty_for(judged=10, duplicates=5) == 0.0
    assert POLICY.penalty_for(judged=9, duplicates=9) == 0.0
    assert POLICY.penalty_for(judged=0, duplicates=0) == 0.0
