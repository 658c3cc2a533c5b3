"""Word w-shingles of a document's main text, hashed with MurmurHash3 (seed 002: w = 11 on the web).

Text is lower-cased and cut into word tokens (``\\w+``, so punctuation and spacing do not
matter). Shingles never span a paragraph break: the main text comes one paragraph per
line, and a document whose paragraphs were only reordered keeps exactly the same set of
shingles. A line shorter than ``w`` words (a heading, a list item, a caption) is carried
into the next line, so runs of short lines are shingled as if they were one paragraph.
A document with fewer than ``w`` words in all has one shingle: all its words.

A shingle's hash is MurmurHash3 x64-128 (seed 0, first 64 bits) of its words joined by
single spaces, UTF-8 encoded. All tokens are joined once into one such string, so every
shingle is a slice of it: the same bytes, without building a string per shingle.

The set of distinct shingle hashes (unsigned 64-bit) is what resemblance is defined on:
r(A, B) = |S(A) & S(B)| / |S(A) | S(B)|.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import mmh3
import numpy as np
import numpy.typing as npt

DEFAULT_WIDTH = 11
_TOKEN = re.compile(r"\w+")
_SPACE = ord(" ")
# The ASCII characters ``str.splitlines`` breaks lines at.
_ASCII_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e"
# In ASCII ``\w`` is [0-9A-Za-z_]: every other ASCII character (line breaks aside) separates tokens as a space does.
_ASCII_SEPARATORS = str.maketrans({
    char: " " for char in map(chr, range(128)) if not (char.isalnum() or char == "_" or char in _ASCII_LINE_BREAKS)
})
# The same for UTF-8 bytes: ASCII separators become spaces, the bytes of other characters stay.
_UTF8_SEPARATORS = bytes(
    ord(" ") if chr(byte).translate(_ASCII_SEPARATORS) == " " else byte for byte in range(256)
)
# Frequent non-ASCII separators: no-break space, typographic quotes, dashes, ellipsis, guillemets.
_FREQUENT_SEPARATORS = "\u00a0\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u00ab\u00bb"

ShingleSet = npt.NDArray[np.uint64]


def tokens(text: str) -> list[str]:
    """The word tokens of ``text``, lower-cased."""
    return _TOKEN.findall(text.lower())


def _line_tokens(text: str) -> Iterable[list[str]]:
    """``tokens(line)`` for every line of ``text``, without the regular expression where it is not needed.

    Separators are replaced by spaces, so ``str.split`` finds the tokens; a line whose pieces
    are not all word characters (a separator left over) goes through the regular expression.
    The whole text is lower-cased at once: line breaks end the context that lower-casing a
    capital sigma looks at, so each line comes out as if lower-cased on its own.
    """
    lowered = text.lower()
    if lowered.isascii():
        return (line.split() for line in lowered.translate(_ASCII_SEPARATORS).splitlines())
    for separator in _FREQUENT_SEPARATORS:
        if separator in lowered:
            lowered = lowered.replace(separator, " ")
    spaced = lowered.encode("utf-8", "surrogatepass").translate(_UTF8_SEPARATORS).decode("utf-8", "surrogatepass")
    return (_words(line) for line in spaced.splitlines())


def _words(line: str) -> list[str]:
    pieces = line.split()
    return pieces if "".join(pieces).isalnum() else _TOKEN.findall(line)


def _token_runs(text: str, width: int) -> tuple[list[str], list[int]]:
    """All tokens in order, and where each block (see :func:`blocks`) ends in that list."""
    words: list[str] = []
    ends: list[int] = []
    carried = 0
    for found in _line_tokens(text):
        if not found:
            continue
        words += found
        carried += len(found)
        if carried >= width:
            ends.append(len(words))
            carried = 0
    if carried:
        if ends and carried < width:
            ends[-1] = len(words)  # a short last line belongs to the paragraph before it
        else:
            ends.append(len(words))
    return words, ends


def blocks(text: str, width: int) -> list[list[str]]:
    """The token runs shingles are taken from: paragraphs, short ones merged into the next."""
    words, ends = _token_runs(text, width)
    return [words[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def shingle_hashes(text: str, width: int = DEFAULT_WIDTH) -> ShingleSet:
    """The distinct MurmurHash3 (x64, first 64 bits) values of the document's ``width``-word shingles."""
    if width < 1:
        raise ValueError("the shingle width must be at least 1")
    words, ends = _token_runs(text, width)
    if not words:
        return np.empty(0, dtype=np.uint64)
    data = " ".join(words).encode()
    # starts[i]: where token i begins in ``data``; starts[len(words)] is one past the end (after a virtual space).
    starts = np.empty(len(words) + 1, dtype=np.intp)
    starts[0], starts[-1] = 0, len(data) + 1
    starts[1:-1] = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _SPACE) + 1
    # Shingle k covers tokens firsts[k] .. lasts[k] - 1: every window of a block, or the whole of a short block.
    block_ends = np.array(ends, dtype=np.intp)
    block_starts = np.concatenate(([0], block_ends[:-1]))
    counts = np.maximum(block_ends - block_starts - (width - 1), 1)
    firsts = np.repeat(block_starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
    lasts = np.minimum(firsts + width, np.repeat(block_ends, counts))
    digest = mmh3.mmh3_x64_128_digest  # 16 bytes: the two 64-bit halves, little-endian
    digests = b"".join([digest(data[a:b]) for a, b in zip(starts[firsts].tolist(), (starts[lasts] - 1).tolist(),
                                                           strict=True)])
    hashes = np.sort(np.frombuffer(digests, dtype="<u8")[::2]).astype(np.uint64, copy=False)
    # Sorted, then each value that differs from the one before: what np.unique does, at a ninth of its cost here.
    distinct: ShingleSet = hashes[np.concatenate(([True], hashes[1:] != hashes[:-1]))]
    return distinct


def resemblance(a: ShingleSet, b: ShingleSet) -> float:
    """Exact Jaccard resemblance of two shingle sets (0 when both are empty)."""
    if a.size == 0 and b.size == 0:
        return 0.0
    common = np.intersect1d(a, b, assume_unique=True).size
    return float(common / (a.size + b.size - common))
