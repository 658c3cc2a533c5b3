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

from libs.common.wire import messages as pb
from services.importance.cash_store import OutboxRow
from services.importance.keys import key_text
from services.importance.shard import Outgoing

log = logging.getLogger(__name__)

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
