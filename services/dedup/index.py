"""What the dedup handler asks of a duplicate index: claim content for URLs, learn who came first.

Exact fingerprints are the first index; near-duplicate indexes (simhash, MinHash LSH
bands) fit the same interface, answering with the earliest URL whose content is close
enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Claim:
    """A document's URL and the fingerprint of its content."""

    url: str
    content_fp: str


class FingerprintIndex(Protocol):
    async def claim(self, batch: Sequence[Claim]) -> dict[str, str]:
        """Records every claim not yet known and returns, per claimed URL, the first URL with that content.

        A URL maps to itself when its content was first seen at that URL (including when the
        same claim is made again after a redelivery). Atomic for the whole batch.
        """
        ...
