"""A document's sketch: MinHash signature, LSH band keys and a 64-bit simhash of its shingle set.

MinHash (Broder): ``permutations`` hash functions h_i(x) = high 32 bits of (a_i x + b_i) mod
2^64 (multiply-shift, a_i odd), each keeping its minimum over the shingle set. The share of
equal positions in two signatures estimates their resemblance (standard error
sqrt(r (1 - r) / permutations), 0.044 at r = 0.5 with 128).

LSH bands: the first ``bands * rows`` signature values cut into ``bands`` runs of ``rows``;
each run hashed (with its band number) to a signed 64-bit key. Two documents share a band
key with probability 1 - (1 - r^rows)^bands: the index looks up candidates by band key.

Simhash (Charikar; Manku et al.): each bit is the majority vote of that bit over the shingle
hashes. It is kept for operators and as the published baseline the evaluator reports.

The coefficients come from a fixed seed: sketches made by any process, at any time, compare.
"""

from __future__ import annotations

from dataclasses import dataclass

import mmh3
import numpy as np
import numpy.typing as npt

from services.dedup.shingles import ShingleSet

Signature = npt.NDArray[np.uint32]

COEFFICIENT_SEED = 20020611  # fixed forever: stored signatures depend on it
_EMPTY_SLOT = np.uint32(0xFFFFFFFF)
_SIGNATURE_CHUNK = 2048  # shingles per step: a 128 x 2048 temporary of 2 MiB at most
_SIMHASH_TALLY_FROM = 64  # from this many shingles, counting byte values beats unpacking every bit
_BYTE_POSITION_OFFSETS = np.arange(8, dtype=np.intp) * 256
_BITS_OF_BYTE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.intp)


@dataclass(frozen=True)
class SketchShape:
    """How sketches are made; changing any of these makes stored sketches incomparable."""

    shingle_width: int = 11
    permutations: int = 128
    bands: int = 20
    rows: int = 3

    def __post_init__(self) -> None:
        if self.shingle_width < 1 or self.permutations < 1 or self.bands < 1 or self.rows < 1:
            raise ValueError("shingle width, permutations, bands and rows must be positive")
        if self.bands * self.rows > self.permutations:
            raise ValueError(f"{self.bands} bands of {self.rows} rows need more than {self.permutations} values")

    def candidate_probability(self, resemblance: float) -> float:
        """Probability that two documents of this resemblance share at least one band key."""
        return float(1.0 - (1.0 - resemblance**self.rows) ** self.bands)


@dataclass(frozen=True)
class Sketch:
    shingles: int
    signature: Signature
    band_keys: tuple[int, ...]
    simhash: int

    @property
    def empty(self) -> bool:
        return self.shingles == 0


def _coefficients(count: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    rng = np.random.default_rng(COEFFICIENT_SEED)
    a = rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True) | np.uint64(1)
    b = rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)
    return a, b


class Sketcher:
    """Makes sketches of shingle sets for one :class:`SketchShape`."""

    def __init__(self, shape: SketchShape) -> None:
        self.shape = shape
        a, b = _coefficients(shape.permutations)
        self._a, self._b = a[:, None], b[:, None]  # one row per hash function

    def signature(self, shingles: ShingleSet) -> Signature:
        """Per hash function, the least high half of a x + b (mod 2^64) over the shingles.

        The high half is monotonic in the 64-bit value, so it is taken once, of the minimum.
        Shingles go through in chunks, so the temporary stays small for long documents.
        """
        if shingles.size == 0:
            return np.full(self.shape.permutations, _EMPTY_SLOT, dtype=np.uint32)
        least = self._least_mixed(shingles[:_SIGNATURE_CHUNK])
        for start in range(_SIGNATURE_CHUNK, shingles.size, _SIGNATURE_CHUNK):
            np.minimum(least, self._least_mixed(shingles[start : start + _SIGNATURE_CHUNK]), out=least)
        minima: Signature = (least >> np.uint64(32)).astype(np.uint32)
        return minima

    def _least_mixed(self, shingles: ShingleSet) -> npt.NDArray[np.uint64]:
        mixed = self._a * shingles  # wraps around: mod 2^64
        mixed += self._b
        least: npt.NDArray[np.uint64] = mixed.min(axis=1)
        return least

    def band_keys(self, signature: Signature) -> tuple[int, ...]:
        rows = self.shape.rows
        data = signature.tobytes()
        width = 4 * rows
        return tuple(
            mmh3.hash64(band.to_bytes(2, "little") + data[band * width : (band + 1) * width], seed=0, signed=True)[0]
            for band in range(self.shape.bands)
        )

    def simhash(self, shingles: ShingleSet) -> int:
        """Bit k is set when more than half the shingle hashes have bit k set (bit 0 the least significant)."""
        if shingles.size == 0:
            return 0
        octets = shingles.view(np.uint8).reshape(-1, 8)
        if shingles.size < _SIMHASH_TALLY_FROM:
            ones = np.count_nonzero(np.unpackbits(octets, axis=1, bitorder="little"), axis=0)
        else:  # tally each byte position's values, then the bits of each value
            values = np.bincount((octets + _BYTE_POSITION_OFFSETS).ravel(), minlength=8 * 256)
            ones = (values.reshape(8, 256) @ _BITS_OF_BYTE).ravel()
        votes = ones * 2 > shingles.size
        return int.from_bytes(np.packbits(votes, bitorder="little").tobytes(), "little")

    def sketch(self, shingles: ShingleSet) -> Sketch:
        signature = self.signature(shingles)
        keys = self.band_keys(signature) if shingles.size else ()
        return Sketch(int(shingles.size), signature, keys, self.simhash(shingles))


def estimated_resemblance(a: Signature, b: Signature) -> float:
    """Share of equal MinHash positions: an unbiased estimate of the two sets' resemblance."""
    return float(np.count_nonzero(a == b) / a.size)


def hamming(a: int, b: int) -> int:
    """Bits in which two 64-bit simhashes differ."""
    return (a ^ b).bit_count()


def signature_bytes(signature: Signature) -> bytes:
    """The signature as stored (little-endian uint32 values)."""
    return signature.astype("<u4").tobytes()


def signature_from_bytes(data: bytes) -> Signature:
    return np.frombuffer(data, dtype="<u4").astype(np.uint32)
