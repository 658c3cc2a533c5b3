"""The partition a key maps to: murmur2, as the Java client and librdkafka's ``murmur2_random`` do.

Every Trawl producer uses the murmur2 partitioner, so services (the scheduler deciding
which hosts it owns) and the ops tools (where is this URL?) can compute a key's partition
without asking the broker, and Java producers agree with Python ones.

:func:`partition_for` is the definition; :func:`fingerprint_partitions` computes it for a
whole batch of URL fingerprints at once (their keys, ``libs.common.url_keys.key_text``, are
16 hex digits, so murmur2 runs over four 32-bit words, vectorised), which the importance
service needs for every link: a test pins the two together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    length = len(data)
    h = (_SEED ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & ~3
    extra = length % 4
    if extra == 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for(key: str, partitions: int) -> int:
    """The partition Kafka's default (murmur2) partitioner gives ``key``."""
    return (murmur2(key.encode("utf-8")) & 0x7FFFFFFF) % partitions


_M32 = np.uint32(_M)
_KEY_SEED = np.uint32(_SEED ^ 16)  # a fingerprint's key is 16 characters long
_HEX_PAIRS = np.array([ord(f"{b:02x}"[0]) | ord(f"{b:02x}"[1]) << 8 for b in range(256)], dtype="<u2")
"""An octet's two hex digits as a little-endian 16-bit word (first digit first in memory)."""


def fingerprint_partitions(fps: Sequence[int], partitions: int) -> list[int]:
    """``partition_for(key_text(fp), partitions)`` of each URL fingerprint, vectorised."""
    if not fps:
        return []
    if partitions == 1:
        return [0] * len(fps)
    count = len(fps)
    octets = np.asarray(fps, dtype=np.int64).astype(">i8").view(np.uint8)
    words = _HEX_PAIRS[octets].view("<u4").reshape(count, 4)  # the key's 16 hex digits, first digit first
    with np.errstate(over="ignore"):
        h = np.full(count, _KEY_SEED, dtype=np.uint32)
        for i in range(4):
            k = words[:, i] * _M32
            k ^= k >> np.uint32(24)
            k *= _M32
            h *= _M32
            h ^= k
        h ^= h >> np.uint32(13)
        h *= _M32
        h ^= h >> np.uint32(15)
    result: list[int] = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(partitions)).tolist()
    return result


def fingerprint_partition(fp: int, partitions: int) -> int:
    """``partition_for(key_text(fp), partitions)`` of one URL fingerprint."""
    return fingerprint_partitions([fp], partitions)[0]
