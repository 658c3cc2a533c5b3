"""Importance updates encoded by hand are the bytes protobuf itself gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from libs.common.wire import messages as pb
from services.importance.updates import encode_update, encode_updates, update_tail

doubles = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 1e-300, float("inf")]), st.floats())


@given(st.text(max_size=300), st.text(max_size=200), doubles, doubles, doubles,
       st.one_of(st.just(0), st.integers(min_value=-(2**63), max_value=2**63 - 1)))
def test_encoded_updates_equal_protobuf_serialisation(url: str, host: str, cash: float, history: float,
                                                      importance: float, at_ms: int) -> None:
    expected = pb.ImportanceUpdate(url=url, host=host, cash=cash, history=history, importance=importance,
                                   updated_at_ms=at_ms).SerializeToString()
    assert encode_update(url, host, cash, history, importance, update_tail(at_ms)) == expected


def test_a_typical_update_decodes_to_its_fields() -> None:
    raw = encode_update("http://a.example/x.html", "a.example", 0.25, 0.0, 1e-6, update_tail(1_700_000_000_000))
    update = pb.ImportanceUpdate.FromString(raw)
    assert (update.url, update.host, update.cash, update.history, update.importance, update.updated_at_ms) == (
        "http://a.example/x.html", "a.example", 0.25, 0.0, 1e-6, 1_700_000_000_000)


@given(st.text(max_size=200), st.lists(st.tuples(st.text(max_size=100), doubles), max_size=5))
def test_encoded_batches_equal_protobuf_serialisation(host: str, pages: list[tuple[str, float]]) -> None:
    entries = [encode_update(url, host, cash, 0.0, 1.0, update_tail(7)) for url, cash in pages]
    expected = pb.ImportanceUpdates(host=host, updates=[
        pb.ImportanceUpdate(url=url, host=host, cash=cash, history=0.0, importance=1.0, updated_at_ms=7)
        for url, cash in pages]).SerializeToString()
    assert encode_updates(host, entries) == expected
