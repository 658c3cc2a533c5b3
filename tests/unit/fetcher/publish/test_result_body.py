"""Fetch result bodies: as fetched by default, zlib on request or when too big, never over the room."""

from __future__ import annotations

import random
import zlib

import pytest

from services.fetcher.publish.result_body import ZLIB_ABOVE, encode_body, was_cut

HTML = b"<html><body>" + b"<p>the same paragraph again</p>" * 400 + b"</body></html>"
NOISE = random.Random(5).randbytes(20_000)  # does not compress


def test_identity_keeps_the_body_as_fetched() -> None:
    assert encode_body(HTML) == (HTML, "identity")
    assert encode_body(HTML, "identity", room=len(HTML)) == (HTML, "identity")


def test_zlib_compresses_bodies_above_a_kilobyte_only() -> None:
    small = HTML[:ZLIB_ABOVE]
    assert encode_body(small, "zlib") == (small, "identity")
    packed, codec = encode_body(HTML, "zlib")
    assert codec == "zlib" and len(packed) < len(HTML) // 10 and zlib.decompress(packed) == HTML


def test_a_body_over_the_room_is_compressed_whatever_the_codec() -> None:
    packed, codec = encode_body(HTML, "identity", room=len(HTML) - 1)
    assert codec == "zlib" and zlib.decompress(packed) == HTML
    assert not was_cut(HTML, packed, codec)


def test_a_body_that_does_not_fit_even_compressed_is_cut_to_the_room() -> None:
    encoded, codec = encode_body(NOISE, "zlib", room=5000)
    assert (encoded, codec) == (NOISE[:5000], "identity")
    assert was_cut(NOISE, encoded, codec)


def test_an_unknown_codec_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown body codec 'lz4'"):
        encode_body(HTML, "lz4")
