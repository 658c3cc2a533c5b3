"""Page-level robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header.

``noindex`` keeps the page out of the index (the document says so); ``nofollow``
records the page's links but follows none of them. ``none`` means both, ``all``
neither (the lecture notes of seed 002; Google's and Bing's documentation).
A meta tag named after the crawler's own token (``<meta name="trawl">``)
applies as well as ``robots``; tags for other crawlers (``googlebot``) do not.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["NOTHING_FORBIDDEN", "RobotsDirectives", "parse_robots_directives", "parse_x_robots_tag"]

# Directives of the X-Robots-Tag header that carry a value after a colon.
_VALUED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


class RobotsDirectives(NamedTuple):
    """What a robots meta tag or X-Robots-Tag header forbids."""

    noindex: bool
    nofollow: bool

    def __or__(self, other: object) -> RobotsDirectives:
        if not isinstance(other, RobotsDirectives):
            return NotImplemented
        return RobotsDirectives(self.noindex or other.noindex, self.nofollow or other.nofollow)


NOTHING_FORBIDDEN = RobotsDirectives(False, False)


def parse_robots_directives(content: str) -> RobotsDirectives:
    """Parse the comma-separated directives of ``<meta name="robots" content=...>``."""
    noindex = nofollow = False
    for raw in content.split(","):
        directive = raw.strip().lower()
        if directive in ("noindex", "none"):
            noindex = True
        if directive in ("nofollow", "none"):
            nofollow = True
    return RobotsDirectives(noindex, nofollow)


def parse_x_robots_tag(value: str, *, agent: str = "trawl") -> RobotsDirectives:
    """Parse an ``X-Robots-Tag`` header value (several headers may be joined with commas).

    Directives after ``<name>:`` apply only to the crawler named ``name``;
    those addressed to another crawler are ignored, those addressed to
    ``agent`` (case-insensitive) or to nobody apply.
    """
    noindex = nofollow = False
    current: str | None = None
    agent = agent.lower()
    for raw in value.split(","):
        directive = raw.strip().lower()
        head, sep, rest = directive.partition(":")
        if sep and head.strip() not in _VALUED_DIRECTIVES:
            current = head.strip()
            directive = rest.strip()
        if current is not None and current != agent:
            continue
        if directive in ("noindex", "none"):
            noindex = True
        if directive in ("nofollow", "none"):
            nofollow = True
    return RobotsDirectives(noindex, nofollow)
