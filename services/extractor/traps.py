"""Spider-trap rules that need nothing but the URL (seed 002: cyclic paths, calendars, session ids).

Each rule has a stable name; a link a rule catches is recorded as a bad link
with reason ``trap:<rule>`` (the linkbase keeps it and never announces it),
not silently dropped, so an operator can see what was cut and why:

``url_length``
    the normalised URL is longer than ``max_url_length`` (the normaliser's own,
    larger limit makes a link ``bad`` with ``too_long``);
``path_depth``
    more than ``max_path_depth`` path segments;
``repeated_segments``
    one path segment occurs more than ``max_segment_repeats`` times
    (``/a/b/a/b/a/b``, ``/x/x/x``), or a run of two or more segments repeats
    immediately (``/en/news/en/news``): the signature of relative links that
    resolve one level deeper on every page, and of symlink loops;
``calendar``
    a date (year and month, in the path or the query) more than
    ``calendar_future_years`` after the fetch or ``calendar_past_years``
    before it: "next month" links of a calendar never end;
``session_id``
    a session id the normaliser could not strip: an ASP.NET cookieless
    segment ``/(S(...))/``, or a parameter named like a session (``...sess...``,
    ``sid``, ``cfid``, ``cftoken``) whose value looks generated;
``link_depth``
    the link is more than ``max_link_depth`` hops from a seed (0: no limit).

The per-host URL budget needs state (how many URLs a host already has) and
lives in the linkbase (``trap:host_budget``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["TRAP_RULES", "TrapRules"]

TRAP_RULES = ("url_length", "path_depth", "repeated_segments", "calendar", "session_id", "link_depth")

# A year and month in a path or value: 2031/05, 2031-05-17, 2031_5, 203105 (no: too many ids look like it).
_DATE_RE = re.compile(r"(?<![0-9])((?:1[5-9]|2[0-9])[0-9]{2})[-/_.](0?[1-9]|1[0-2])(?![0-9])")
_YEAR_PARAMS = frozenset({"year", "yr", "y", "jahr", "annee", "anno", "cal_year", "calendar_year"})
_YEAR_VALUE_RE = re.compile(r"(?:1[5-9]|2[0-9])[0-9]{2}")
_ASPNET_COOKIELESS_RE = re.compile(r"^\((?:[A-Z]\([A-Za-z0-9_-]{8,}\))+\)$")
# session, sess_id, ps_session, sessionKey, oscsid, cfid... but not "assessment" or "side".
_SESSION_NAME_RE = re.compile(
    r"(?:^|[_-])sess(?:ion)?(?:[_-]?(?:id|key|token))?$|^[a-z]{0,4}sid$|^cf(?:id|token)$", re.IGNORECASE
)
_MAX_SEGMENTS_COMPARED = 64
_VERDICT_CACHE_SIZE = 32768
_GENERATED_VALUE_RE = re.compile(r"[A-Za-z0-9_-]{16,}")


def _looks_generated(value: str) -> bool:
    """A long token mixing letters and digits: a session id, not a word or a number."""
    return (
        _GENERATED_VALUE_RE.fullmatch(value) is not None
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


@dataclass(frozen=True)
class TrapRules:
    """Limits of the URL-only trap rules; ``enabled`` names the rules applied (see the module docstring)."""

    max_url_length: int = 1024
    max_path_depth: int = 16
    max_segment_repeats: int = 2
    calendar_future_years: int = 2
    calendar_past_years: int = 30
    max_link_depth: int = 0
    enabled: tuple[str, ...] = TRAP_RULES

    def __post_init__(self) -> None:
        unknown = sorted(set(self.enabled) - set(TRAP_RULES))
        if unknown:
            raise ValueError(f"unknown trap rule(s) {', '.join(unknown)}; known: {', '.join(TRAP_RULES)}")
        # Navigation links repeat on every page of a site: their verdicts are cached.
        object.__setattr__(self, "_url_verdict", functools.lru_cache(maxsize=_VERDICT_CACHE_SIZE)(self._url_rules))

    def check(self, url: str, *, year: int, link_depth: int = 0) -> str:
        """The name of the first rule that catches the normalised ``url``, or "".

        ``year`` is the fetch's year (the calendar window moves with it),
        ``link_depth`` the depth the link's target would have (page depth + 1).
        """
        if "link_depth" in self.enabled and 0 < self.max_link_depth < link_depth:
            return "link_depth"
        verdict: str = self._url_verdict(url, year)  # type: ignore[attr-defined]  # set in __post_init__
        return verdict

    def _url_rules(self, url: str, year: int) -> str:
        enabled = self.enabled
        if "url_length" in enabled and len(url) > self.max_url_length:
            return "url_length"
        rest = url.partition("://")[2]
        slash = rest.find("/")
        if slash == -1:
            return ""
        path, _, query = rest[slash:].partition("?")
        segments = [s for s in path.split("/") if s]
        if "path_depth" in enabled and len(segments) > self.max_path_depth:
            return "path_depth"
        if "repeated_segments" in enabled and self._repeats(segments):
            return "repeated_segments"
        if "calendar" in enabled and self._calendar(path, query, year):
            return "calendar"
        if "session_id" in enabled and _session_id(segments, query):
            return "session_id"
        return ""

    def _repeats(self, segments: list[str]) -> bool:
        if len(segments) < 3:
            return False
        folded = [s.lower() for s in segments[:_MAX_SEGMENTS_COMPARED]]
        count = len(folded)
        if len(set(folded)) == count:  # no segment twice: neither rule can fire
            return False
        if max(Counter(folded).values()) > self.max_segment_repeats:
            return True
        for size in range(2, count // 2 + 1):
            for start in range(count - 2 * size + 1):
                if folded[start : start + size] == folded[start + size : start + 2 * size]:
                    return True
        return False

    def _calendar(self, path: str, query: str, year: int) -> bool:
        low, high = year - self.calendar_past_years, year + self.calendar_future_years
        for match in _DATE_RE.finditer(path):
            if not low <= int(match.group(1)) <= high:
                return True
        if not query:
            return False
        for match in _DATE_RE.finditer(query):
            if not low <= int(match.group(1)) <= high:
                return True
        for piece in query.split("&"):
            name, _, value = piece.partition("=")
            if name.lower() in _YEAR_PARAMS and _YEAR_VALUE_RE.fullmatch(value) and not low <= int(value) <= high:
                return True
        return False


def _session_id(segments: list[str], query: str) -> bool:
    for segment in segments:
        if segment.startswith("(") and _ASPNET_COOKIELESS_RE.match(segment):
            return True
        if ";" in segment:
            for param in segment.split(";")[1:]:
                name, _, value = param.partition("=")
                if _SESSION_NAME_RE.search(name) and _looks_generated(value):
                    return True
    if query:
        for piece in query.split("&"):
            name, _, value = piece.partition("=")
            if _SESSION_NAME_RE.search(name) and _looks_generated(value):
                return True
    return False
