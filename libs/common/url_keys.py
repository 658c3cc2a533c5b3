"""What identifies a URL in normal form: its fingerprint, key, host, kind and path keys.

Every service reads these off a URL that :func:`libs.common.urls.normalize_url` returned
(links arrive normalised: the extractor normalises every URL), without parsing it again.
Each is defined here once; ``libs.common.urls`` composes them with normalisation
(``url_fingerprint``, ``url_key``, ``url_host`` normalise first), and the partition a key
maps to is ``libs.common.kafka.partitioner``'s.

- the **fingerprint**: the signed 64-bit first half of MurmurHash3 x64 128 of the URL's
  UTF-8 bytes; the primary key of a URL in every table;
- the **key text**: the fingerprint as 16 lowercase hex digits (unsigned), the Kafka key of
  URL-keyed topics;
- the **host**: lowercase, without port or user, an IPv6 address without brackets; the unit
  of politeness and of the fetch requests' key;
- the **kind**: home page (path ``/``, no query), directory index (path ending in ``/``), or
  any other page;
- two path keys, for two purposes:

  - the **section key** (:func:`section_key`): host plus first directory, or the host alone
    for a page not under a directory. The unit the freshness models learn a publishing
    rhythm for, and the unit a large site is split by between fetchers;
  - the **trap path key** (:func:`trap_path_key`): host plus first path segment, ``host/``
    for a page at the root, except a dynamic page at the root (one with a query), which is
    its own path: endless query variants are the classic crawler trap. The unit the link
    base counts duplicates per, published with every discovered URL (``path_key``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import mmh3

__all__ = [
    "UrlKind",
    "first_directory",
    "key_fingerprint",
    "key_text",
    "normalized_fingerprint",
    "normalized_fingerprints",
    "normalized_host",
    "section_key",
    "section_key_of",
    "trap_path_key",
    "url_kind",
]


def normalized_fingerprint(normalized: str) -> int:
    """Signed 64-bit fingerprint of a URL in normal form (first half of MurmurHash3 x64 128)."""
    first: int = mmh3.hash64(normalized.encode("utf-8"), 0, True, True)[0]
    return first


def normalized_fingerprints(normalized_urls: Sequence[str]) -> list[int]:
    """:func:`normalized_fingerprint` of each URL (a batch: one lookup of the hash function)."""
    hash64 = mmh3.hash64
    return [hash64(url.encode("utf-8"), 0, True, True)[0] for url in normalized_urls]


def key_text(fp: int) -> str:
    """A URL fingerprint as 16 lowercase hex digits (unsigned): the Kafka key of URL-keyed topics."""
    return f"{fp & 0xFFFFFFFFFFFFFFFF:016x}"


def key_fingerprint(key: str) -> int:
    """The signed URL fingerprint a :func:`key_text` spells (no normalisation, no hashing)."""
    value = int(key, 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def normalized_host(normalized: str) -> str:
    """The host of a URL in normal form: no port, no user, an IPv6 address without brackets
    (what ``urlsplit(url).hostname`` gives); "" for text without ``://``."""
    start = normalized.find("://")
    if start < 0:
        return ""
    authority = normalized[start + 3 :].split("/", 1)[0].split("?", 1)[0]
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        return hostport[1 : hostport.find("]")]
    return hostport.partition(":")[0]


class UrlKind(IntEnum):
    HOME = 0
    INDEX = 1
    PAGE = 2


def url_kind(normalized: str) -> UrlKind:
    """The kind of a URL in normal form: a site's home page (path ``/``, no query), a directory
    index (a path ending in ``/``, no query), or any other page (anything else, too)."""
    scheme_end = normalized.find("://")
    if scheme_end < 0:
        return UrlKind.PAGE
    slash = normalized.find("/", scheme_end + 3)
    if slash < 0:
        return UrlKind.HOME
    if "?" in normalized:
        return UrlKind.PAGE
    if slash == len(normalized) - 1:
        return UrlKind.HOME
    return UrlKind.INDEX if normalized.endswith("/") else UrlKind.PAGE


def _path_and_query(normalized: str) -> tuple[str, str]:
    """The path (``/`` at least) and the query of a URL in normal form."""
    rest = normalized.partition("://")[2]
    cut = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if found != -1:
            cut = min(cut, found)
    path, _, query = rest[cut:].partition("#")[0].partition("?")
    return path or "/", query


def first_directory(normalized: str) -> str:
    """The first segment of the URL's path when it is a directory (a slash follows it), else "".

    ``/news/2024/x.html`` and ``/news/`` are in ``news``; ``/x.html`` and ``/`` in none.
    """
    segments = _path_and_query(normalized)[0].split("/", 2)
    return segments[1] if len(segments) == 3 else ""


def section_key_of(host: str, directory: str) -> str:
    """The :func:`section_key` of a URL of ``host`` in the first directory ``directory`` ("" for none)."""
    return f"{host}/{directory}" if directory else host


def section_key(normalized: str) -> str:
    """``host/first-directory`` of a URL in normal form, or the host when the URL is not in a directory.

    ``http://a.test:8080/news/x.html`` -> ``a.test/news``; ``http://a.test/calendar.php?m=3``
    -> ``a.test``. The separator is ``/`` because host names hold hyphens and never slashes,
    so a key without ``/`` is a host's.
    """
    return section_key_of(normalized_host(normalized), first_directory(normalized))


def trap_path_key(normalized: str) -> str:
    """Host plus first path segment of a URL in normal form: the unit of trap signals.

    ``/news/2024/x.html`` is under ``a.test/news``. A page directly under the root is under
    ``a.test/``, except a dynamic one (with a query: ``/calendar.php?m=3``), which is its own
    path ``a.test/calendar.php``, since endless query variants are the classic trap.
    """
    path, query = _path_and_query(normalized)
    first, slash, _tail = path.lstrip("/").partition("/")
    segment = first if slash or query else ""
    return f"{normalized_host(normalized)}/{segment}"
