"""Word w-shingles of a document's main text, hashed with MurmurHash3 (seed 002: w = 11 on the web).

Text is lower-cased and cut into word tokens (``\\w+``, so punctuation and spacing do not
matter). Shingles never span a paragraph break: the main text comes one paragraph per
line, and a document whose paragraphs were only reordered keeps exactly the same set of
shingles. A line shorter than ``w`` words (a heading, a list item, a caption) is carried
into the next line, so runs of short lines are shingled as if they were one paragraph.
A document with fewer than ``w`` words in all has one shingle: all its words.

The set of distinct shingle hashes (unsigned 64-bit) is what resemblance is defined on:
r(A, B) = |S(A) & S(B)| / |S(A) | S(B)|.
"""

from __future__ import annotations

import re

import mmh3
import numpy as np
import numpy.typing as npt

DEFAULT_WIDTH = 11
_TOKEN = re.compile(r"\w+")

ShingleSet = npt.NDArray[np.uint64]


def tokens(text: str) -> list[str]:
    """The word tokens of ``text``, lower-cased."""
    return _TOKEN.findall(text.lower())


def blocks(text: str, width: int) -> list[list[str]]:
    """The token runs shingles are taken from: paragraphs, short ones merged into the next."""
    out: list[list[str]] = []
    carry: list[str] = []
    for line in text.splitlines():
        words = tokens(line)
        if not words:
            continue
        carry.extend(words)
        if len(carry) >= width:
            out.append(carry)
            carry = []
    if carry:
        if out and len(carry) < width:
            out[-1].extend(carry)  # a short last line belongs to the paragraph before it
        else:
            out.append(carry)
    return out


def shingle_hashes(text: str, width: int = DEFAULT_WIDTH) -> ShingleSet:
    """The distinct MurmurHash3 (x64, first 64 bits) values of the document's ``width``-word shingles."""
    if width < 1:
        raise ValueError("the shingle width must be at least 1")
    hashes: list[int] = []
    hash64 = mmh3.hash64
    for words in blocks(text, width):
        if len(words) <= width:
            hashes.append(hash64(" ".join(words), seed=0, signed=False)[0])
            continue
        for start in range(len(words) - width + 1):
            hashes.append(hash64(" ".join(words[start : start + width]), seed=0, signed=False)[0])
    return np.unique(np.array(hashes, dtype=np.uint64))


def resemblance(a: ShingleSet, b: ShingleSet) -> float:
    """Exact Jaccard resemblance of two shingle sets (0 when both are empty)."""
    if a.size == 0 and b.size == 0:
        return 0.0
    common = np.intersect1d(a, b, assume_unique=True).size
    return float(common / (a.size + b.size - common))
