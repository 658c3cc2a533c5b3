"""Input offsets stored with a service's state belong to one incarnation of their topic."""

from __future__ import annotations

from libs.common.kafka.stored_offsets import applied_offset, record_applied


def test_an_offset_holds_for_its_incarnation_only() -> None:
    applied: dict[str, int] = {}
    record_applied(applied, "trawl.page-links", "id-1", 5000)
    assert applied_offset(applied, "trawl.page-links", "id-1") == 5000
    assert applied_offset(applied, "trawl.page-links", "id-2") == 0  # the broker lost its data: from 0 again
    record_applied(applied, "trawl.page-links", "id-2", 12)
    assert applied == {"trawl.page-links@id-2": 12}


def test_an_offset_stored_before_incarnations_counts_for_the_current_one() -> None:
    applied = {"trawl.page-links": 700, "trawl.cash-transfers": 9}
    assert applied_offset(applied, "trawl.page-links", "id-1") == 700
    record_applied(applied, "trawl.page-links", "id-1", 701)
    assert applied == {"trawl.page-links@id-1": 701, "trawl.cash-transfers": 9}


def test_a_topic_without_an_id_keeps_the_bare_name() -> None:
    applied: dict[str, int] = {}
    record_applied(applied, "t", "", 3)
    assert applied == {"t": 3}
    assert applied_offset(applied, "t", "") == 3
    assert applied_offset(applied, "t2", "x") == 0
