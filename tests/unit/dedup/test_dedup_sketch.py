"""MinHash signatures, LSH band keys and simhash."""

from __future__ import annotations

import numpy as np
import pytest

from services.dedup.shingles import resemblance
from services.dedup.sketch import (
    Sketcher,
    SketchShape,
    estimated_resemblance,
    hamming,
    signature_bytes,
    signature_from_bytes,
)


def _sets(overlap: int, own: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(overlap * 1000 + own)
    values = rng.integers(0, 2**64 - 1, size=overlap + 2 * own, dtype=np.uint64, endpoint=True)
    shared, a_only, b_only = values[:overlap], values[overlap:overlap + own], values[overlap + own:]
    return np.unique(np.concatenate([shared, a_only])), np.unique(np.concatenate([shared, b_only]))


@pytest.mark.parametrize(("overlap", "own"), [(900, 50), (500, 250), (200, 400), (0, 300)])
def test_the_signature_estimates_resemblance(overlap: int, own: int) -> None:
    sketcher = Sketcher(SketchShape())
    a, b = _sets(overlap, own)
    exact = resemblance(a, b)
    estimate = estimated_resemblance(sketcher.signature(a), sketcher.signature(b))
    assert abs(estimate - exact) < 0.15  # more than three standard errors at 128 permutations


def test_sketches_are_deterministic_across_sketchers() -> None:
    a, _b = _sets(100, 10)
    first, second = Sketcher(SketchShape()).sketch(a), Sketcher(SketchShape()).sketch(a)
    assert first.band_keys == second.band_keys and first.simhash == second.simhash
    assert np.array_equal(signature_from_bytes(signature_bytes(first.signature)), first.signature)
    assert len(first.band_keys) == SketchShape().bands and len(set(first.band_keys)) == SketchShape().bands


def test_near_sets_share_bands_and_distant_ones_do_not() -> None:
    sketcher = Sketcher(SketchShape())
    near_a, near_b = (sketcher.sketch(s) for s in _sets(950, 25))
    far_a, far_b = (sketcher.sketch(s) for s in _sets(0, 400))
    assert set(near_a.band_keys) & set(near_b.band_keys)
    assert not set(far_a.band_keys) & set(far_b.band_keys)
    assert hamming(near_a.simhash, near_b.simhash) < hamming(far_a.simhash, far_b.simhash)


def test_an_empty_set_has_no_band_keys() -> None:
    sketch = Sketcher(SketchShape()).sketch(np.array([], dtype=np.uint64))
    assert sketch.empty and sketch.band_keys == () and sketch.simhash == 0


def test_shape_checks_and_candidate_probability() -> None:
    with pytest.raises(ValueError):
        SketchShape(permutations=32, bands=20, rows=3)
    shape = SketchShape(bands=20, rows=3)
    assert shape.candidate_probability(0.6) > 0.98 > 0.1 > shape.candidate_probability(0.1)
