"""URL fingerprints, their Kafka keys and the partition that owns them, fast enough for every link.

Links arrive normalised (the extractor normalises every URL), so the fingerprint is the
hash of the string itself, the value ``libs.common.urls.url_fingerprint`` computes after
normalising again. The owner of a URL is the partition Kafka's murmur2 partitioner gives
its key, computed for a whole batch of keys at once (every key is 16 hex digits, so
murmur2 runs over four 32-bit words, vectorised).
"""

from __future__ import annotations

from collections.abc import Sequence

import mmh3
import numpy as np

_M = np.uint32(0x5BD1E995)
_SEED = np.uint32(0x9747B28C ^ 16)
_HEX_PAIRS = np.array([ord(f"{b:02x}"[0]) | ord(f"{b:02x}"[1]) << 8 for b in range(256)], dtype="<u2")
"""An octet's two hex digits as a little-endian 16-bit word (first digit first in memory)."""


def fingerprint(normalized_url: str) -> int:
    """Signed 64-bit fingerprint of an already normalised URL (equals ``url_fingerprint``)."""
    first: int = mmh3.hash64(normalized_url.encode("utf-8"), seed=0, x64arch=True, signed=True)[0]
    return first


def key_text(fp: int) -> str:
    """The fingerprint as the topics' key: 16 lowercase hex digits (equals ``url_key``)."""
    return f"{fp & 0xFFFFFFFFFFFFFFFF:016x}"


def owners(fps: Sequence[int], partitions: int) -> list[int]:
    """The partition murmur2 gives the key of each fingerprint (``partition_for(key_text(fp), n)``)."""
    if not fps:
        return []
    if partitions == 1:
        return [0] * len(fps)
    count = len(fps)
    octets = np.asarray(fps, dtype=np.int64).astype(">i8").view(np.uint8)
    words = _HEX_PAIRS[octets].view("<u4").reshape(count, 4)  # the key's 16 hex digits, first digit first
    with np.errstate(over="ignore"):
        h = np.full(len(fps), _SEED, dtype=np.uint32)
        for i in range(4):
            k = words[:, i] * _M
            k ^= k >> np.uint32(24)
            k *= _M
            h *= _M
            h ^= k
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
    result: list[int] = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(partitions)).tolist()
    return result


def owner(fp: int, partitions: int) -> int:
    return owners([fp], partitions)[0]
