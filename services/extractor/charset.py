"""Turn the bytes of a fetched HTML page into text.

The order follows browsers (WHATWG "determine the character encoding"),
with two crawler refinements:

1. a byte order mark wins (it is in the bytes, so it cannot be stale), and so
   does the shape of UTF-16 without one (a zero in every other byte);
2. the charset of the ``Content-Type`` header, then the one declared in the
   first 4 KB (``<meta charset>``, ``<meta http-equiv>``, ``<?xml encoding>``).
   A declaration is trusted only if the body decodes with it (a handful of
   bad bytes are tolerated); a legacy single-byte declaration (latin-1,
   windows-1252, ASCII) over a body that is valid UTF-8 with non-ASCII
   content is taken to be UTF-8, the commonest server misconfiguration;
3. UTF-8, if the body decodes as UTF-8 (again tolerating a few bad bytes);
4. a detected charset (``charset_normalizer``) on the first 64 KB (BeeBot's
   re-decode); among equally likely readings, the one most used on the web;
5. windows-1252 with replacement characters, which never fails.

Labels are mapped to the supersets browsers actually use (latin-1 and ASCII
to windows-1252, GB2312 to GBK, Shift_JIS to cp932, EUC-KR to cp949).
"""

from __future__ import annotations

import codecs
import logging
import re
import unicodedata

logger = logging.getLogger(__name__)

__all__ = ["decode_html", "looks_binary"]

_SNIFF_BYTES = 4096
_DETECT_BYTES = 65536
# At most one bad byte per this many bytes is put down to damage rather than a wrong charset.
_TOLERATED_ERROR_RATE = 1000
_FALLBACK = "cp1252"

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# WHATWG MIME sniffing's "binary data bytes": control characters no text format uses.
_BINARY_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_BINARY_SNIFF_BYTES = 1445
# Unicode general categories of characters no text holds: controls, unassigned, private use, surrogates.
_IMPLAUSIBLE_CATEGORIES = frozenset({"Cc", "Cn", "Co", "Cs"})
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([^\s;"',]+)""", re.IGNORECASE)
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.()+\-]+)""", re.IGNORECASE | re.DOTALL
)
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([a-zA-Z0-9_.\-]+)""", re.IGNORECASE)

# Python codec name -> the superset that browsers decode that label with.
_SUPERSETS = {
    "ascii": "cp1252",
    "latin-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gbk",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
}
_LEGACY_SINGLE_BYTE = frozenset({"cp1252", "cp1254", "iso8859-15"})
# charset_normalizer's names, most used on the web first (W3Techs: UTF-8, then windows-1252 by far).
_PREVALENT_ON_THE_WEB = ("utf_8", "cp1252", "iso8859_1", "cp1251", "gb18030", "cp932", "euc_kr", "big5")


def _codec_name(label: str, *, in_document: bool) -> str | None:
    """The Python text codec for a charset label, or None when the label is unknown."""
    label = label.strip().strip("\"'").lower()
    if not label or len(label) > 40:
        return None
    if label in ("x-user-defined", "replacement", "utf-7", "utf7"):
        return None  # WHATWG never decodes these as labelled
    try:
        name = codecs.lookup(label).name
        b"".decode(name)  # rejects bytes-to-bytes codecs such as "base64" or "zlib"
    except (LookupError, ValueError):
        return None
    if in_document and name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # a document that could declare this in ASCII is not UTF-16
    return _SUPERSETS.get(name, name)


def _decode_tolerant(body: bytes, codec: str) -> str | None:
    """Decode with ``codec`` unless it produces more bad bytes than damage would explain."""
    try:
        return body.decode(codec)
    except UnicodeDecodeError:
        pass
    except LookupError:
        return None
    text = body.decode(codec, "replace")
    errors = text.count("\ufffd")
    if errors <= max(1, len(body) // _TOLERATED_ERROR_RATE):
        return text
    return None


def _declared_labels(body: bytes, content_type_header: str | None) -> list[tuple[str, bool]]:
    """Declared charset labels in order of authority, each with whether it came from the document."""
    labels: list[tuple[str, bool]] = []
    if content_type_header:
        header_match = _HEADER_CHARSET_RE.search(content_type_header)
        if header_match:
            labels.append((header_match.group(1), False))
    head = body[:_SNIFF_BYTES]
    for pattern in (_META_CHARSET_RE, _XML_ENCODING_RE):
        found = pattern.search(head)
        if found:
            labels.append((found.group(1).decode("ascii", "replace"), True))
    return labels


def _detect(body: bytes) -> str | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # an optional dependency: fall back to windows-1252
        return None
    try:
        matches = from_bytes(body[:_DETECT_BYTES])
        best = matches.best()
        if best is None:
            return None
        # The detector cannot tell single-byte Latin code pages apart on short texts (French in
        # windows-1252 ties with windows-1250 and -1257): among equally good readings, prefer the
        # one the web uses most.
        tied = [m.encoding for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    except Exception:  # a detector bug must not lose the page
        logger.warning("charset detection failed", exc_info=True)
        return None
    chosen = next((e for e in _PREVALENT_ON_THE_WEB if e in tied), str(best.encoding))
    return _codec_name(chosen, in_document=False)


def looks_binary(body: bytes) -> bool:
    """Whether a body served as HTML is binary data (an image, an archive, a truncated PDF).

    WHATWG's sniffing test on the first 1,445 bytes, tolerant of a few stray control
    characters (about 11% of random bytes are binary data bytes; damaged HTML has a handful).
    Text behind a byte order mark, or shaped like UTF-16 without one (a zero in every
    other byte), is judged by its characters instead: the first 1,445 characters are
    decoded and must not hold more than a few that no text has (see
    :func:`_implausible_text`).
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return _implausible_text(body[len(bom):], codec)
    head = body[:_BINARY_SNIFF_BYTES]
    binary_bytes = len(head) - len(head.translate(None, _BINARY_BYTES))
    if binary_bytes <= max(2, len(head) // 100):
        return False
    wide = _utf16_shape(head)
    return wide is None or _implausible_text(body, wide)


def _utf16_shape(head: bytes) -> str | None:
    """``utf-16-le`` or ``-be`` when zero bytes sit in the odd or even places only (UTF-16 text without
    a byte order mark: Latin letters and markup are a zero and a byte), else None. Random bytes have
    about three zeros in each place per 1,445 bytes."""
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if max(even, odd) < max(1, len(head) // 32) or min(even, odd) > max(even, odd) // 4:
        return None
    return "utf-16-le" if odd > even else "utf-16-be"


def _implausible_text(body: bytes, codec: str) -> bool:
    """Whether more than one in twenty of the first 1,445 characters of ``body`` in ``codec`` are
    characters no text has: bytes the codec cannot decode, controls (but tab, line feed, form feed,
    carriage return), lone surrogates, private-use and unassigned code points. Text has none, or a
    few (damage, icon-font glyphs in private use); random bytes in UTF-16 about one in five, in UTF-8
    or UTF-32 most."""
    decoder = codecs.getincrementaldecoder(codec)("replace")
    width = 4 if "32" in codec else 2 if "16" in codec else 1
    text = decoder.decode(body[: _BINARY_SNIFF_BYTES * width], final=False)[:_BINARY_SNIFF_BYTES]
    implausible = sum(1 for char in text if char == "\ufffd" or (
        char not in "\t\n\x0c\r" and unicodedata.category(char) in _IMPLAUSIBLE_CATEGORIES))
    return implausible > max(2, len(text) // 20)


def decode_html(body: bytes, content_type_header: str | None) -> tuple[str, str]:
    """Decode an HTML body; returns ``(text, codec name used)``. Never raises on any bytes."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(bom_codec, "replace"), bom_codec
    wide = _utf16_shape(body[:_BINARY_SNIFF_BYTES])
    if wide is not None and not _implausible_text(body, wide):  # UTF-16 without a BOM, whatever it declares
        return body.decode(wide, "replace"), wide

    for label, in_document in _declared_labels(body, content_type_header):
        codec = _codec_name(label, in_document=in_document)
        if codec is None:
            logger.debug("unknown charset label %r", label)
            continue
        if codec in _LEGACY_SINGLE_BYTE and not body.isascii():
            try:
                return body.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                return body.decode(codec, "replace"), codec
        declared = _decode_tolerant(body, codec)
        if declared is not None:
            return declared, codec
        logger.debug("declared charset %s does not fit the body", codec)

    as_utf8 = _decode_tolerant(body, "utf-8")
    if as_utf8 is not None:
        return as_utf8, "utf-8"

    detected = _detect(body)
    if detected is not None:
        return body.decode(detected, "replace"), detected
    return body.decode(_FALLBACK, "replace"), _FALLBACK
