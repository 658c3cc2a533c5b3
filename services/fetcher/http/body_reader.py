"""Reading one response body with bounded time and memory.

The HTTP client asks servers for ``gzip`` or ``deflate`` and decodes bodies
itself (aiohttp's own decompression is turned off), so that:

* the decoded size is capped while decoding: a compression bomb yields at most
  ``max_body_bytes + 1`` bytes per step and is cut there (``truncated``), never
  inflated whole in memory;
* the bytes as received (content coding kept, transfer coding removed) are kept
  too, for the WARC archive;
* a body that drips in slower than ``min_bytes_per_second`` on average (after
  ``rate_grace`` seconds) is abandoned with error ``slow_body``; the fetch's
  total timeout still bounds everything.

An unknown content coding gives error ``undecodable_body`` with the raw bytes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import zlib
from dataclasses import dataclass
from typing import Protocol

from services.fetcher.http.deadlines import FIRED_RATE, Deadline, Deadlines

logger = logging.getLogger(__name__)

__all__ = [
    "ACCEPT_ENCODING",
    "ERROR_SLOW_BODY",
    "ERROR_UNDECODABLE_BODY",
    "Body",
    "BodyLimits",
    "BodyReader",
    "read_body",
]

ACCEPT_ENCODING = "gzip, deflate"
"""The content codings the fetcher asks for (and decodes)."""
ERROR_SLOW_BODY = "slow_body"
ERROR_UNDECODABLE_BODY = "undecodable_body"


class ByteStream(Protocol):
    """What is read from: aiohttp's ``StreamReader`` (``response.content``)."""

    async def read(self, n: int = -1) -> bytes: ...

    def at_eof(self) -> bool: ...


_OWN_DEADLINES = Deadlines()
"""The rate checks of bodies read without a request's deadline."""


@dataclass(frozen=True)
class BodyLimits:
    """Caps on one body: decoded (and received) bytes, and the slowest average rate accepted."""

    max_body_bytes: int
    min_bytes_per_second: float = 0.0
    rate_grace: float = 5.0
    chunk_size: int = 64 * 1024


@dataclass(slots=True)  # not frozen: made for every body, and a frozen one costs twice as much to make
class Body:
    """A body as received (``raw``) and decoded (``decoded``); ``error`` is ``""`` or a short code."""

    raw: bytes
    decoded: bytes
    truncated: bool
    error: str = ""


class _Decoder(Protocol):
    def decode(self, data: bytes, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` decoded bytes of ``data``, and whether more output is pending."""
        ...


class _Identity:
    def decode(self, data: bytes, limit: int) -> tuple[bytes, bool]:
        return data[:limit], len(data) > limit


class _Zlib:
    """gzip (``wbits=31``) or deflate, which servers send zlib-wrapped or raw: the first bytes decide."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._inflater = zlib.decompressobj(31 if gzip else 15)
        self._started = False

    def decode(self, data: bytes, limit: int) -> tuple[bytes, bool]:
        if self._inflater.eof:
            return b"", False
        try:
            out = self._inflater.decompress(data, limit)
        except zlib.error:
            if self._gzip or self._started:
                raise
            self._inflater = zlib.decompressobj(-15)  # raw deflate, without the zlib wrapper
            out = self._inflater.decompress(data, limit)
        self._started = True
        return out, bool(self._inflater.unconsumed_tail)


_IDENTITY = _Identity()  # holds no state: one for every body sent without a content coding


def _decoder(content_encoding: str) -> _Decoder | None:
    if not content_encoding:  # no Content-Encoding header: most responses
        return _IDENTITY
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return _IDENTITY
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if len(codings) == 1 and codings[0] == "deflate":
        return _Zlib(gzip=False)
    return None


class BodyReader:
    """Reads one body; what was received so far stays in :attr:`raw` if reading raises."""

    def __init__(self, content_encoding: str, limits: BodyLimits) -> None:
        self._encoding = content_encoding
        self._limits = limits
        self.raw = bytearray()

    async def read(self, stream: ByteStream, deadline: Deadline | None = None) -> Body:
        """Read and decode the body within the limits; never raises for bad content codings or slow servers.

        Network errors from ``stream`` propagate. With an error, ``decoded`` is what could be decoded.
        The minimum rate is kept by ``deadline`` (the request's, see :mod:`services.fetcher.http.deadlines`)
        when given, else by a deadline of this body's own, without a time limit.
        """
        limits = self._limits
        if limits.min_bytes_per_second <= 0:
            return await self._read(stream)
        if deadline is None:
            own = _OWN_DEADLINES.watch(math.inf)
            try:
                return await self.read(stream, own)
            finally:
                own.close()
        deadline.watch_rate(self.raw, limits.min_bytes_per_second, limits.rate_grace,
                            asyncio.get_running_loop().time())
        try:
            return await self._read(stream)
        except asyncio.CancelledError:
            if not deadline.expired_here(FIRED_RATE):
                raise
            return Body(bytes(self.raw), b"", False, ERROR_SLOW_BODY)
        finally:
            deadline.stop_rate()

    async def _read(self, stream: ByteStream) -> Body:
        cap = self._limits.max_body_bytes
        size = min(self._limits.chunk_size, cap + 1)
        decoder = _decoder(self._encoding)
        raw = self.raw
        if decoder is _IDENTITY:  # no coding: the body is the bytes as received, kept once
            first = await stream.read(size)
            if len(first) <= cap and (not first or stream.at_eof()):
                return Body(first, first, False)  # the whole body in one read (most pages): no copies
            raw += first
            while len(raw) <= cap:
                chunk = await stream.read(size)
                if not chunk:
                    body = bytes(raw)
                    return Body(body, body, False)
                raw += chunk
            body = bytes(raw[:cap])
            return Body(body, body, True)
        unknown = f"{ERROR_UNDECODABLE_BODY}:{self._encoding[:40]}"
        decoded = bytearray()
        while True:
            chunk = await stream.read(size)
            if not chunk:
                return Body(bytes(raw), bytes(decoded), False, "" if decoder is not None else unknown)
            raw += chunk
            if decoder is None:
                if len(raw) > cap:
                    return Body(bytes(raw[:cap]), b"", True, unknown)
                continue
            try:
                out, pending = decoder.decode(chunk, cap + 1 - len(decoded))
            except zlib.error as exc:
                return Body(bytes(raw), bytes(decoded), False, f"{ERROR_UNDECODABLE_BODY}:{exc}")
            decoded += out
            if len(decoded) > cap or pending or len(raw) > cap:
                del decoded[cap:]
                return Body(bytes(raw[:cap]), bytes(decoded), True)


async def read_body(stream: ByteStream, content_encoding: str, limits: BodyLimits) -> Body:
    """Read one body with a fresh :class:`BodyReader`."""
    return await BodyReader(content_encoding, limits).read(stream)
