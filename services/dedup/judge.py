"""When two documents are duplicates: the one rule the service and the offline evaluator share.

Exact duplicates have the same content fingerprint. Near-duplicates are found through the
LSH index, so a pair counts only if the index would bring them together (at least one
shared band key) and their estimated resemblance reaches the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.dedup.shingles import shingle_hashes
from services.dedup.sketch import Sketch, Sketcher, SketchShape, estimated_resemblance, hamming

EXACT = 1.0


@dataclass(frozen=True)
class Document:
    """What is compared: a content fingerprint (exact copies) and a sketch (near copies)."""

    content_fp: str
    sketch: Sketch


class DuplicateJudge:
    """Sketches texts and decides pairs; ``threshold`` is the resemblance that makes a near-duplicate."""

    def __init__(self, shape: SketchShape, threshold: float) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("the resemblance threshold must be in (0, 1]")
        self.shape = shape
        self.threshold = threshold
        self.sketcher = Sketcher(shape)

    def sketch(self, text: str) -> Sketch:
        return self.sketcher.sketch(shingle_hashes(text, self.shape.shingle_width))

    def near_similarity(self, a: Sketch, b: Sketch) -> float | None:
        """The estimated resemblance when ``a`` and ``b`` are near-duplicates, else None."""
        if a.empty or b.empty or set(a.band_keys).isdisjoint(b.band_keys):
            return None
        similarity = estimated_resemblance(a.signature, b.signature)
        return similarity if similarity >= self.threshold else None

    def similarity(self, a: Document, b: Document) -> float | None:
        """1.0 for exact copies, the resemblance for near-duplicates, None otherwise."""
        if a.content_fp and a.content_fp == b.content_fp:
            return EXACT
        return self.near_similarity(a.sketch, b.sketch)


def simhash_duplicates(a: Sketch, b: Sketch, max_distance: int = 3) -> bool:
    """Manku et al.'s rule, for comparison: simhashes within ``max_distance`` bits."""
    return not a.empty and not b.empty and hamming(a.simhash, b.simhash) <= max_distance
