"""Shingle hashes and sketches are bit-identical to the reference definitions, on any text.

Stored sketches are only comparable while every shingle hash, MinHash value, band key and
simhash is computed exactly as when they were stored. The reference implementations below
are the definitions written the plain way (one string and one MurmurHash3 call per shingle,
one N x permutations matrix, one bit vote per hash); the service's faster code must agree
with them bit for bit: on generated texts (unicode, every line break ``str.splitlines``
knows, short lines merged into paragraphs, texts shorter than the width, empty text), on
the simulated web's main texts, and on arbitrary shingle sets.
"""

from __future__ import annotations

import re

import mmh3
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libs.simweb.build import build_web
from libs.simweb.config import SimWebConfig
from services.dedup.shingles import blocks, shingle_hashes
from services.dedup.sketch import COEFFICIENT_SEED, Sketcher, SketchShape

EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Bounded by the number of examples; no deadline per example, which a loaded machine would trip."""

_REFERENCE_TOKEN = re.compile(r"\w+")


def reference_blocks(text: str, width: int) -> list[list[str]]:
    out: list[list[str]] = []
    carry: list[str] = []
    for line in text.splitlines():
        words = _REFERENCE_TOKEN.findall(line.lower())
        if not words:
            continue
        carry.extend(words)
        if len(carry) >= width:
            out.append(carry)
            carry = []
    if carry:
        if out and len(carry) < width:
            out[-1].extend(carry)
        else:
            out.append(carry)
    return out


def reference_shingle_hashes(text: str, width: int) -> npt.NDArray[np.uint64]:
    hashes: list[int] = []
    for words in reference_blocks(text, width):
        if len(words) <= width:
            hashes.append(mmh3.hash64(" ".join(words), seed=0, signed=False)[0])
            continue
        for start in range(len(words) - width + 1):
            hashes.append(mmh3.hash64(" ".join(words[start : start + width]), seed=0, signed=False)[0])
    return np.unique(np.array(hashes, dtype=np.uint64))


def reference_signature(shingles: npt.NDArray[np.uint64], permutations: int) -> npt.NDArray[np.uint32]:
    rng = np.random.default_rng(COEFFICIENT_SEED)
    a = rng.integers(0, 2**64 - 1, size=permutations, dtype=np.uint64, endpoint=True) | np.uint64(1)
    b = rng.integers(0, 2**64 - 1, size=permutations, dtype=np.uint64, endpoint=True)
    if shingles.size == 0:
        return np.full(permutations, 0xFFFFFFFF, dtype=np.uint32)
    mixed = shingles[:, None] * a[None, :] + b[None, :]
    minima: npt.NDArray[np.uint32] = (mixed >> np.uint64(32)).min(axis=0).astype(np.uint32)
    return minima


def reference_band_keys(signature: npt.NDArray[np.uint32], bands: int, rows: int) -> tuple[int, ...]:
    data = signature.tobytes()
    width = 4 * rows
    return tuple(
        mmh3.hash64(band.to_bytes(2, "little") + data[band * width : (band + 1) * width], seed=0, signed=True)[0]
        for band in range(bands)
    )


def reference_simhash(shingles: npt.NDArray[np.uint64]) -> int:
    simhash = 0
    for bit in range(64):
        ones = sum((value >> bit) & 1 for value in shingles.tolist())
        if ones * 2 > shingles.size:
            simhash |= 1 << bit
    return simhash


def assert_shingles_match(text: str, width: int) -> None:
    got, want = shingle_hashes(text, width), reference_shingle_hashes(text, width)
    assert got.dtype == np.uint64
    assert got.tolist() == want.tolist()
    assert blocks(text, width) == reference_blocks(text, width)


def assert_sketch_matches(sketcher: Sketcher, shingles: npt.NDArray[np.uint64]) -> None:
    shape = sketcher.shape
    sketch = sketcher.sketch(shingles)
    signature = reference_signature(shingles, shape.permutations)
    assert sketch.shingles == shingles.size
    assert sketch.signature.dtype == np.uint32
    assert sketch.signature.tolist() == signature.tolist()
    assert sketch.band_keys == (reference_band_keys(signature, shape.bands, shape.rows) if shingles.size else ())
    assert sketch.simhash == reference_simhash(shingles)


# Every line boundary str.splitlines knows, ASCII and not, and characters where lower-casing or \w is subtle:
# final sigma, dotted capital I, Kelvin sign, sharp s, ligatures, combining marks, digits of other scripts,
# underscores, typographic punctuation, a lone surrogate.
_LINE_BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
_TRICKY = ["Σ", "ΣΑΣ", "İ", "\u212a", "ß", "ﬁ", "e\u0301", "\u0663", "²", "_", "__init__", "\u00a0", "\u200b",
           "\u2019", "\u201c", "\u2014", "\u2026", "\u00ab", "\u00b7", "日本語", "🙂", "\ud800", "\t", "  ", "-", "'",
           ".", ",", "\x00", "\x1f", "\x7f"]
_WORDS = ["the", "Harbor", "market", "opened", "a", "new", "BRIDGE", "x", "valley", "2026", "o'clock", "e-mail"]
_pieces = st.one_of(st.sampled_from(_LINE_BREAKS), st.sampled_from(_TRICKY), st.sampled_from(_WORDS),
                    st.sampled_from([" "] * 4))
_TEXTS = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=300),
    st.lists(_pieces, max_size=200).map("".join),
)


def _paragraph_text(lines: list[int], words: list[str], breaks: list[str]) -> str:
    """Lines of the given word counts (0 makes an empty line), joined by the given line breaks."""
    out, used = [], 0
    for count, line_break in zip(lines, breaks, strict=False):
        out.append(" ".join(words[(used + i) % len(words)] for i in range(count)) + line_break)
        used += count
    return "".join(out)


@EXAMPLES
@given(_TEXTS, st.integers(min_value=1, max_value=14))
def test_shingle_hashes_match_the_reference_on_any_text(text: str, width: int) -> None:
    assert_shingles_match(text, width)


@EXAMPLES
@given(
    st.lists(st.integers(min_value=0, max_value=25), max_size=30),
    st.lists(st.sampled_from([*_WORDS, "Σ", "ﬁle", "naïve", "x_y"]), min_size=1, max_size=40),
    st.lists(st.sampled_from(_LINE_BREAKS), min_size=30, max_size=30),
    st.integers(min_value=1, max_value=14),
)
def test_short_lines_merged_into_paragraphs_match_the_reference(
    lines: list[int], words: list[str], breaks: list[str], width: int
) -> None:
    assert_shingles_match(_paragraph_text(lines, words, breaks), width)


@pytest.mark.parametrize("text", [
    "", " ", "\n\n", "...", "one", "Too short to shingle.", "Σ\nİ", "a\r\nb\x85c",
    # a capital sigma ends a word unless a cased letter follows, looking through case-ignorable characters (\u2019)
    "ΔΣ\u2019Λ", "ΔΣ\u00a0Λ", "ΔΣ\u2028Λ", "ΔΣ\x85Λ", "ΔΣ\u0301\u2019 Λ", "\u212aelvin", "a_b c\u00b7d",
])
@pytest.mark.parametrize("width", [1, 2, 11])
def test_empty_short_and_tricky_texts_match_the_reference(text: str, width: int) -> None:
    assert_shingles_match(text, width)


def test_the_simulated_webs_main_texts_match_the_reference() -> None:
    web = build_web(SimWebConfig(pages=200))
    texts = [page.text for page in web.pages.values()][:150]
    assert sum(len(text) for text in texts) > 100_000
    sketcher = Sketcher(SketchShape())
    for text in texts:
        assert_shingles_match(text, 11)
        assert_sketch_matches(sketcher, reference_shingle_hashes(text, 11))


_SHAPES = st.builds(
    lambda permutations, rows, bands: SketchShape(permutations=permutations, rows=rows,
                                                  bands=min(bands, permutations // rows)),
    st.sampled_from([8, 64, 128, 200]), st.integers(min_value=1, max_value=4), st.integers(min_value=1, max_value=40),
)


@EXAMPLES
@given(
    _SHAPES,
    st.one_of(
        st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=300),
        st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1, 2**32, 2**32 - 1]), max_size=200),
    ),
)
def test_sketches_match_the_reference_on_any_shingle_set(shape: SketchShape, values: list[int]) -> None:
    shingles = np.array(values, dtype=np.uint64)  # unsorted and with repeats as well as proper sets
    assert_sketch_matches(Sketcher(shape), shingles)
    assert_sketch_matches(Sketcher(shape), np.unique(shingles))


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 2047, 2048, 2049, 5000])
def test_sketches_match_the_reference_around_the_chunk_and_tally_sizes(size: int) -> None:
    rng = np.random.default_rng(size)
    shingles = np.unique(rng.integers(0, 2**64 - 1, size=size, dtype=np.uint64, endpoint=True))
    assert_sketch_matches(Sketcher(SketchShape()), shingles)
