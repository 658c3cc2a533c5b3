"""Reading bodies: content codings decoded within the cap, raw bytes kept, slow bodies abandoned."""

from __future__ import annotations

import asyncio
import gzip
import zlib

import pytest

from services.fetcher.http.body_reader import ERROR_SLOW_BODY, BodyLimits, read_body


class Chunks:
    """A byte stream handing out fixed chunks, optionally after a pause each (real time)."""

    def __init__(self, data: bytes, size: int = 1000, pause: float = 0.0) -> None:
        self._parts = [data[i:i + size] for i in range(0, len(data), size)]
        self._pause = pause

    async def read(self, n: int = -1) -> bytes:
        if self._pause:
            await asyncio.sleep(self._pause)
        return self._parts.pop(0) if self._parts else b""

    def at_eof(self) -> bool:
        return not self._parts


TEXT = b"<p>" + b"hello world " * 500 + b"</p>"


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        ("", TEXT),
        ("identity", TEXT),
        ("gzip", gzip.compress(TEXT, mtime=0)),  # a fixed header: every worker collects the same test ids
        ("x-gzip", gzip.compress(TEXT, mtime=0)),
        ("deflate", zlib.compress(TEXT)),
        ("deflate", zlib.compress(TEXT)[2:-4]),  # raw deflate, as some servers send it
    ],
)
async def test_content_codings_are_decoded_and_the_raw_bytes_kept(encoding: str, encoded: bytes) -> None:
    body = await read_body(Chunks(encoded), encoding, BodyLimits(max_body_bytes=1 << 20))
    assert body.error == ""
    assert body.decoded == TEXT
    assert body.raw == encoded
    assert not body.truncated


async def test_a_compression_bomb_stops_at_the_cap_without_inflating_the_rest() -> None:
    bomb = gzip.compress(bytes(200 * 1024 * 1024), compresslevel=9)  # 200 MiB of zeros in ~200 KiB
    body = await read_body(Chunks(bomb, size=64 * 1024), "gzip", BodyLimits(max_body_bytes=1 << 20))
    assert body.truncated
    assert len(body.decoded) == 1 << 20
    assert len(body.raw) <= 64 * 1024  # stopped within the first chunk


async def test_an_unknown_coding_is_an_error_with_the_raw_bytes() -> None:
    body = await read_body(Chunks(b"\x8b\x00brotli?"), "br", BodyLimits(max_body_bytes=1000))
    assert body.error.startswith("undecodable_body:br")
    assert body.decoded == b""
    assert body.raw == b"\x8b\x00brotli?"


async def test_corrupt_gzip_is_an_error_keeping_what_decoded() -> None:
    body = await read_body(Chunks(b"\x1f\x8bnot gzip at all"), "gzip", BodyLimits(max_body_bytes=1000))
    assert body.error.startswith("undecodable_body")


async def test_a_body_dripping_slower_than_the_minimum_rate_is_abandoned() -> None:
    # 10 bytes per chunk every 50 ms is 200 B/s; at least 1000 B/s is asked after 0.2 s.
    limits = BodyLimits(max_body_bytes=1 << 20, min_bytes_per_second=1000.0, rate_grace=0.2)
    body = await read_body(Chunks(b"x" * 10_000, size=10, pause=0.05), "", limits)
    assert body.error == ERROR_SLOW_BODY
    assert 0 < len(body.raw) < 10_000


async def test_a_body_faster_than_the_minimum_rate_is_read_whole() -> None:
    limits = BodyLimits(max_body_bytes=1 << 20, min_bytes_per_second=100.0, rate_grace=0.05)
    body = await read_body(Chunks(b"x" * 2000, size=500, pause=0.01), "", limits)
    assert body.error == ""
    assert body.decoded == b"x" * 2000


@pytest.mark.parametrize("size", [len(TEXT), len(TEXT) // 3, 7])
async def test_a_body_is_the_same_whether_it_comes_in_one_read_or_many(size: int) -> None:
    body = await read_body(Chunks(TEXT, size=size), "", BodyLimits(max_body_bytes=1 << 20))
    assert (body.raw, body.decoded, body.truncated) == (TEXT, TEXT, False)


async def test_a_single_read_over_the_cap_is_still_cut() -> None:
    body = await read_body(Chunks(TEXT, size=len(TEXT)), "", BodyLimits(max_body_bytes=100, chunk_size=1 << 20))
    assert (body.raw, body.truncated) == (TEXT[:100], True)
