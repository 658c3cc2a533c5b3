"""Cash transfers between importance partitions: building the messages, and applying them once.

The shares a partition sends to pages other partitions own are grouped by destination and
cut into messages of at most ``MAX_ENTRIES`` entries. Each message of one (source,
destination) pair gets the next sequence number; it is written to the outbox with the
commit that took the cash out of the source's state, and sent after it. The destination
applies sequence numbers above the last one it applied (stored with its state) and skips
the others, so a message sent twice (after a crash, or by the next owner of the source
partition re-sending its outbox) moves its cash once.
"""

from __future__ import annotations

import logging
import math
import struct
from collections.abc import Sequence

import numpy as np

from libs.common.url_keys import key_text
from libs.common.wire import messages as pb
from services.importance.cash_store import OutboxRow
from services.importance.shard import Outgoing
from services.importance.updates import varint

log = logging.getLogger(__name__)

_DOUBLE = struct.Struct("<d")

MAX_ENTRIES = 20_000
"""About 1.5 MB per message: under the producers' 4 MiB limit with room for long URLs."""


def outbox_rows(source: int, outgoing: dict[int, Outgoing], sent_seq: list[int], now_ms: int) -> list[OutboxRow]:
    """The messages for ``outgoing`` (destination -> shares); advances ``sent_seq`` in place."""
    rows: list[OutboxRow] = []
    for destination in sorted(outgoing):
        out = outgoing[destination]
        for start in range(0, len(out), MAX_ENTRIES):
            end = start + MAX_ENTRIES
            sent_seq[destination] += 1
            cash = out.cash[start:end]
            message = pb.CashTransfer(
                source_partition=source, sequence=sent_seq[destination], sent_at_ms=now_ms,
                urls=out.urls[start:end], cash=cash, fingerprints=out.keys[start:end],
            )
            rows.append(OutboxRow(destination, sent_seq[destination], key_text(out.keys[start]), math.fsum(cash),
                                  message.SerializeToString()))
    return rows


def accept(message: pb.CashTransfer, received_seq: list[int], partition: int) -> bool:
    """Whether to apply ``message`` (new), advancing ``received_seq``; False for a repeat."""
    source = message.source_partition
    if not 0 <= source < len(received_seq):
        raise ValueError(f"cash transfer from unknown partition {source}")
    last = received_seq[source]
    if message.sequence <= last:
        return False
    if message.sequence != last + 1:
        log.error("cash transfers %s..%s from partition %s to %s are missing: their cash is lost",
                  last + 1, message.sequence - 1, source, partition)
    received_seq[source] = message.sequence
    return True


def transfer_lists(message: pb.CashTransfer, raw: bytes | None) -> tuple[Sequence[int], Sequence[str], Sequence[float]]:
    """The fingerprints, URLs and amounts of a decoded transfer, ``raw`` being its encoded bytes (or None).

    Protobuf writes the fields in number order, so the encoded message ends with the packed
    ``cash`` and ``fingerprints`` (8 bytes an entry each) and ``sent_at_ms``: when ``raw`` has
    exactly that shape (and its first and last entries agree with the decoded lists), the two
    numeric lists are read from it in one step each, several times faster than entry by entry
    from the decoded message. Any other layout is read from the decoded message.
    """
    n = len(message.urls)
    if raw is not None and n and len(message.fingerprints) == len(message.cash) == n:
        tail = b"\x30" + varint(message.sent_at_ms) if message.sent_at_ms else b""
        head = varint(8 * n)
        fp_start = len(raw) - len(tail) - 8 * n
        cash_start = fp_start - len(head) - 1 - 8 * n
        if (cash_start >= len(head) + 1 and raw.endswith(tail)
                and raw[fp_start - len(head) - 1 : fp_start] == b"\x2a" + head
                and raw[cash_start - len(head) - 1 : cash_start] == b"\x22" + head):
            fps: list[int] = np.frombuffer(raw, "<i8", n, fp_start).tolist()
            cash: list[float] = np.frombuffer(raw, "<f8", n, cash_start).tolist()
            if (fps[0] == message.fingerprints[0] and fps[-1] == message.fingerprints[-1]
                    and _DOUBLE.pack(message.cash[-1]) == raw[fp_start - len(head) - 9 : fp_start - len(head) - 1]):
                return fps, message.urls, cash
    return message.fingerprints, message.urls, message.cash
