"""Cash transfer messages: grouped by destination, numbered, cut to size, applied once."""

from __future__ import annotations

import logging
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import services.importance.transfers as transfers
from libs.common.kafka.partitioner import fingerprint_partition
from libs.common.url_keys import key_fingerprint, normalized_fingerprint
from libs.common.wire import messages as pb
from services.importance.shard import Outgoing
from services.importance.transfers import accept, outbox_rows, transfer_lists


def urls_owned_by(partition: int, count: int, partitions: int = 12) -> list[str]:
    found: list[str] = []
    n = 0
    while len(found) < count:
        url = f"http://t.example/{n}"
        if fingerprint_partition(normalized_fingerprint(url), partitions) == partition:
            found.append(url)
        n += 1
    return found


def shares(urls: list[str], cash: float) -> Outgoing:
    return Outgoing([normalized_fingerprint(u) for u in urls], urls, [cash] * len(urls))


def test_rows_are_numbered_per_destination_and_keyed_to_reach_it() -> None:
    outgoing = {3: shares(urls_owned_by(3, 2), 0.5), 7: shares(urls_owned_by(7, 3), 0.25)}
    sent_seq = [0] * 12
    sent_seq[7] = 4
    rows = outbox_rows(1, outgoing, sent_seq, 123)
    assert [(r.destination, r.sequence) for r in rows] == [(3, 1), (7, 5)]
    assert sent_seq[3] == 1 and sent_seq[7] == 5
    for row in rows:
        assert fingerprint_partition(key_fingerprint(row.key), 12) == row.destination
        message = pb.CashTransfer()
        message.ParseFromString(row.payload)
        assert message.source_partition == 1 and message.sequence == row.sequence and message.sent_at_ms == 123
        assert row.cash == pytest.approx(sum(message.cash))
        assert list(message.fingerprints) == [normalized_fingerprint(u) for u in message.urls]
    assert list(pb.CashTransfer.FromString(rows[1].payload).urls) == outgoing[7].urls


def test_large_transfers_are_cut_into_several_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfers, "MAX_ENTRIES", 2)
    rows = outbox_rows(0, {5: shares(urls_owned_by(5, 5), 1.0)}, [0] * 12, 0)
    assert [r.sequence for r in rows] == [1, 2, 3] and sum(r.cash for r in rows) == 5.0


def test_a_transfer_is_applied_once(caplog: pytest.LogCaptureFixture) -> None:
    received = [0] * 12
    assert accept(pb.CashTransfer(source_partition=2, sequence=1), received, 0)
    assert not accept(pb.CashTransfer(source_partition=2, sequence=1), received, 0)
    assert accept(pb.CashTransfer(source_partition=2, sequence=2), received, 0)
    with caplog.at_level(logging.ERROR):
        assert accept(pb.CashTransfer(source_partition=2, sequence=5), received, 0)
    assert "missing" in caplog.text and received[2] == 5
    with pytest.raises(ValueError):
        accept(pb.CashTransfer(source_partition=12, sequence=1), received, 0)


@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.text(max_size=30), st.floats()), min_size=1,
                max_size=300),
       st.integers(-(2**63), 2**63 - 1))
def test_transfer_lists_read_from_the_encoded_message_equal_the_decoded_ones(
        entries: list[tuple[int, str, float]], sent_at_ms: int) -> None:
    message = pb.CashTransfer(source_partition=1, sequence=2, sent_at_ms=sent_at_ms, urls=[u for _, u, _ in entries],
                              cash=[c for _, _, c in entries], fingerprints=[k for k, _, _ in entries])
    raw = message.SerializeToString()
    decoded = pb.CashTransfer.FromString(raw)
    keys, urls, cash = transfer_lists(decoded, raw)
    assert isinstance(keys, list) and isinstance(cash, list)  # read from the bytes, not the message
    assert list(keys) == list(decoded.fingerprints) and list(urls) == list(decoded.urls)
    assert struct.pack(f"<{len(cash)}d", *cash) == struct.pack(f"<{len(cash)}d", *decoded.cash)


def test_transfer_lists_of_another_layout_come_from_the_decoded_message() -> None:
    message = pb.CashTransfer(source_partition=1, sequence=2, sent_at_ms=5, urls=["http://a.example/1"], cash=[1.5],
                              fingerprints=[7])
    more = pb.CashTransfer(urls=["http://a.example/2"], cash=[2.5], fingerprints=[8])
    raw = message.SerializeToString() + more.SerializeToString()  # a valid message: the lists concatenated
    decoded = pb.CashTransfer.FromString(raw)
    keys, urls, cash = transfer_lists(decoded, raw)
    assert (list(keys), list(urls), list(cash)) == ([7, 8], ["http://a.example/1", "http://a.example/2"], [1.5, 2.5])
    assert transfer_lists(decoded, None)[0] is decoded.fingerprints
