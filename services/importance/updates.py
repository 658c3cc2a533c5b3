"""Importance updates encoded without building a protobuf message per page.

A batch announces tens of thousands of pages; building an ``ImportanceUpdate`` and
serialising it costs about twice what the few concatenations here do. ``encode_update``
returns exactly the bytes ``pb.ImportanceUpdate(...).SerializeToString()`` returns (proto3:
fields in number order, empty strings and +0.0 left out), and ``encode_updates`` those of
``pb.ImportanceUpdates(host=..., updates=[...])``, the topic's message: one per host and round
(at most :data:`UPDATES_PER_MESSAGE` entries), which unit tests check.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

UPDATES_PER_MESSAGE = 500
"""Entries of one ``ImportanceUpdates`` message (about 100 bytes each): a host with more announced in one
round gets several messages."""

_DOUBLE = struct.Struct("<d")
_ALL_DOUBLES = struct.Struct("<BdBdBd")
_ZERO = bytes(8)


def varint(value: int) -> bytes:
    """Protobuf varint of an integer (a negative int64 as its 64-bit two's complement)."""
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def update_tail(updated_at_ms: int) -> bytes:
    """The encoded ``updated_at_ms`` field, shared by the updates of one batch."""
    return b"\x30" + varint(updated_at_ms) if updated_at_ms else b""


def _field(tag: bytes, raw: bytes) -> bytes:
    return tag + varint(len(raw)) + raw if raw else b""


def encode_update(url: str, host: str, cash: float, history: float, importance: float, tail: bytes) -> bytes:
    """``ImportanceUpdate(url, host, cash, history, importance, updated_at_ms)`` serialised.

    ``tail`` is ``update_tail(updated_at_ms)``.
    """
    u, h = url.encode("utf-8"), host.encode("utf-8")
    if 0 < len(u) < 0x80 and 0 < len(h) < 0x80:
        head = b"\x0a%c%b\x12%c%b" % (len(u), u, len(h), h)
    else:
        head = _field(b"\x0a", u) + _field(b"\x12", h)
    if cash and history and importance:  # none is zero (-0.0 is falsy too, and takes the other way)
        return head + _ALL_DOUBLES.pack(0x19, cash, 0x21, history, 0x29, importance) + tail
    c, hi, im = _DOUBLE.pack(cash), _DOUBLE.pack(history), _DOUBLE.pack(importance)
    return b"".join((head, b"\x19" + c if c != _ZERO else b"", b"\x21" + hi if hi != _ZERO else b"",
                     b"\x29" + im if im != _ZERO else b"", tail))


def encode_updates(host: str, updates: Sequence[bytes]) -> bytes:
    """``ImportanceUpdates(host, updates)`` serialised, each of ``updates`` an ``encode_update`` result."""
    parts = [_field(b"\x0a", host.encode("utf-8"))]
    for update in updates:
        parts.append(b"\x12" + varint(len(update)) + update)
    return b"".join(parts)
