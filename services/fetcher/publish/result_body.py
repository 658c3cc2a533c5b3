"""How a fetch result carries its body (``FetchResult.body_codec``).

``identity`` (the default) sends the body as fetched: the producer compresses whole
batches (``TRAWL_KAFKA_COMPRESSION``, lz4 by default) in librdkafka's own threads, in C and
without the interpreter's lock, so the fetcher's event loop does no compression at all.
``zlib`` compresses each body above 1 KiB at level 1 in the fetcher, for a producer that
does not compress. Either way a body that would not fit the room left in the message
(the producer's largest message less the rest of the result) is zlib-compressed, and if
even that does not fit, cut to the room and flagged truncated: a result is never refused
by the producer for its size. The extractor reads both codecs, so results written with
either stay readable.
"""

from __future__ import annotations

import zlib

BODY_CODECS = ("identity", "zlib")
ZLIB_ABOVE = 1024  # smaller bodies are sent as they are: compression would save next to nothing
ZLIB_LEVEL = 1  # twice as fast as level 3 on HTML, a few percent larger


def encode_body(body: bytes, codec: str = "identity", room: int | None = None) -> tuple[bytes, str]:
    """``body`` as a fetch result carries it with ``codec``, in at most ``room`` bytes when given.

    Returns the bytes and the codec they are in. The bytes are shorter than ``body`` in codec
    ``identity`` only when ``body`` was cut to fit ``room`` (see :func:`was_cut`).
    """
    if codec not in BODY_CODECS:
        raise ValueError(f"unknown body codec {codec!r}: use one of {', '.join(BODY_CODECS)}")
    too_big = room is not None and len(body) > room
    if too_big or (codec == "zlib" and len(body) > ZLIB_ABOVE):
        packed = zlib.compress(body, ZLIB_LEVEL)
        if room is None or len(packed) <= room:
            return packed, "zlib"
        return body[: max(room, 0)], "identity"
    return body, "identity"


def was_cut(body: bytes, encoded: bytes, codec: str) -> bool:
    """Whether :func:`encode_body` cut ``body`` to fit its room."""
    return codec == "identity" and len(encoded) < len(body)
