"""The partition a key maps to: murmur2, as the Java client and librdkafka's ``murmur2_random`` do.

Every Trawl producer uses the murmur2 partitioner, so services (the scheduler deciding
which hosts it owns) and the ops tools (where is this URL?) can compute a key's partition
without asking the broker, and Java producers agree with Python ones.
"""

from __future__ import annotations

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
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
