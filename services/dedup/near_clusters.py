"""Which cluster a new document joins: the pure decision behind the near-duplicate index.

Candidates are the indexed documents (and the earlier documents of the same batch) that share
at least one LSH band key with the new one. A candidate is a near-duplicate when the judge's
rule holds (estimated resemblance at or above the threshold). The document joins the
verified candidate whose cluster is oldest (smallest representative sequence number; the
higher resemblance breaks ties) and is named a duplicate of that cluster's representative,
the first copy seen. Without a verified candidate it starts a cluster of its own.
A page is never a duplicate of itself: candidates with the same URL are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from services.dedup.judge import DuplicateJudge
from services.dedup.sketch import Signature, Sketch, estimated_resemblance


@dataclass(frozen=True, slots=True)
class NearClaim:
    """A document to judge: its URL, fingerprints, sketch and fetch time."""

    url: str
    url_fp: int
    content_fp: str
    sketch: Sketch
    fetched_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class IndexedDoc:
    """A document already in the index (or judged earlier in the same batch)."""

    url_fp: int
    url: str
    signature: Signature
    representative: str
    representative_seq: int


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a claim landed: its sequence number, its cluster's representative, the resemblance."""

    seq: int
    representative: str
    representative_seq: int
    similarity: float

    def duplicate_of(self, url: str) -> str | None:
        return None if self.representative == url else self.representative


def place(
    claims: Sequence[NearClaim],
    seqs: Sequence[int],
    candidates: Mapping[int, Iterable[IndexedDoc]],
    judge: DuplicateJudge,
) -> list[Placement]:
    """Places each claim in order; ``candidates`` maps a band key to the indexed documents under it."""
    batch_bands: dict[int, list[IndexedDoc]] = {}
    placements: list[Placement] = []
    for claim, seq in zip(claims, seqs, strict=True):
        best: tuple[int, float, IndexedDoc] | None = None
        seen: set[int] = {claim.url_fp}
        for key in claim.sketch.band_keys:
            for doc in (*candidates.get(key, ()), *batch_bands.get(key, ())):
                if doc.url_fp in seen:
                    continue
                seen.add(doc.url_fp)
                similarity = estimated_resemblance(claim.sketch.signature, doc.signature)
                if similarity < judge.threshold:
                    continue
                if best is None or (doc.representative_seq, -similarity) < (best[0], -best[1]):
                    best = (doc.representative_seq, similarity, doc)
        if best is None:
            placement = Placement(seq, claim.url, seq, 0.0)
        else:
            placement = Placement(seq, best[2].representative, best[0], best[1])
        placements.append(placement)
        indexed = IndexedDoc(claim.url_fp, claim.url, claim.sketch.signature, placement.representative,
                             placement.representative_seq)
        for key in claim.sketch.band_keys:
            batch_bands.setdefault(key, []).append(indexed)
    return placements
