"""The HTTP ``Link`` header (RFC 8288): ``<url>; rel="canonical", <url>; rel=next``.

Servers declare a canonical URL or pagination there, for HTML pages as well
as for documents that have no ``<head>``. Only the target and ``rel`` are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["parse_link_header"]

_LINK_VALUE_RE = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,<]*(?:=\s*(?:\"[^\"]*\"|[^;,<]*))?)*)")
_REL_RE = re.compile(r"""(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)
_MAX_LINKS = 64


def parse_link_header(values: Iterable[str]) -> list[tuple[str, str]]:
    """``(url, rel)`` of every link in the given ``Link`` header values (at most 64); never raises."""
    found: list[tuple[str, str]] = []
    for value in values:
        for match in _LINK_VALUE_RE.finditer(value):
            rel = _REL_RE.search(match.group(2))
            if rel is not None:
                found.append((match.group(1).strip(), (rel.group(1) or rel.group(2) or "").strip()))
            if len(found) >= _MAX_LINKS:
                return found
    return found
