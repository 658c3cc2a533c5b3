"""Input offsets a service stores with its own state, told apart by the topic's incarnation.

A service that commits its state and the input offsets it applied in one database
transaction skips a redelivered record by its offset (below the one stored). Offsets
belong to one incarnation of a topic: a broker that lost its data (and a topic deleted
and created again) numbers them from 0 again, and every new record would look applied.
So the offset is stored under ``topic@id`` (the topic's id, :attr:`Record.incarnation`),
and an offset stored for another id means nothing. An offset stored under the bare topic
name (before incarnations were kept) is taken to be the current incarnation's.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping


def _key(topic: str, incarnation: str) -> str:
    return f"{topic}@{incarnation}" if incarnation else topic


def applied_offset(applied: Mapping[str, int], topic: str, incarnation: str) -> int:
    """The next offset to apply of ``topic`` in ``incarnation`` (0: none applied)."""
    key = _key(topic, incarnation)
    if key in applied:
        return applied[key]
    if any(k.startswith(topic + "@") for k in applied):
        return 0  # offsets of an earlier incarnation: this one starts afresh
    return applied.get(topic, 0)


def record_applied(applied: MutableMapping[str, int], topic: str, incarnation: str, next_offset: int) -> None:
    """Stores ``next_offset`` for ``topic`` in ``incarnation``, dropping what other incarnations left."""
    key = _key(topic, incarnation)
    if key not in applied:
        for stale in [k for k in applied if k == topic or k.startswith(topic + "@")]:
            del applied[stale]
    applied[key] = next_offset
