"""One robots.txt read for one crawler (RFC 9309), and matched conservatively.

Parsing follows RFC 9309 and Google's reference parser (google/robotstxt):

* a UTF-8 byte-order mark (or a leading part of one) is skipped; a file that
  starts with a UTF-16 byte-order mark is read as UTF-16;
* lines end at CR, LF or CRLF; a line keeps at most ``MAX_LINE_BYTES`` bytes
  (Google's limit), the rest of it is ignored;
* ``#`` starts a comment; ``key: value``, or ``key value`` when the colon is
  missing and there are exactly two words; keys are case-insensitive and
  matched by prefix, with Google's accepted typos (``useragent``,
  ``dissallow``, ``site-map``...);
* a group is one or more user-agent lines followed by rules; only an
  ``allow``/``disallow`` line ends the list of agents, so a Sitemap,
  Crawl-delay or unknown line between two user-agent lines does not split
  the group;
* every group naming us is merged; if none does, every ``*`` group is; if
  there is neither, everything is allowed;
* the most specific (longest) matching rule wins; an allow wins a tie; empty
  patterns match nothing; ``*`` matches any characters and a final ``$``
  ends the path; ``/robots.txt`` itself is always allowed.

Where sites, crawlers and the other parsers' test suites read a file or a URL
in more than one way, a URL is allowed only if **every** reading allows it
(docs/robots.md lists them, and which suite each comes from):

* our token: as configured, and each product token in it without its
  version (``FigTree Robot libwww-perl/5.04`` is also ``figtree``;
  ``trawl/2.1`` is ``trawl`` only);
* a user-agent line: Google's reading (the leading letters, ``-`` and ``_``
  of the value: ``foo/1.2`` and ``FOO BAR`` are ``foo``), each of its words
  (``One, Two, Three`` names three agents), the longest name that begins our
  name (protego: ``hedwig`` for ``hedwig-news``), and the first name in the
  file that begins ours (CPython; the groups of that name merged);
* a file: as the RFC reads it, and leniently (HTML tags dropped, a missing
  colon after a known key forgiven, any Unicode space trimmed, a line that
  is not UTF-8 read as cp1252);
* a path and a pattern: as given, in RFC 3986 normal form, and decoded
  (:mod:`services.fetcher.robots.robots_patterns`); a Disallow pattern ending in ``$``
  also disallows the literal ``$``.

Crawl-delay (and Request-rate, as seconds per request) of the groups that
apply are kept, the largest if several; Sitemap lines anywhere in the file
are kept in order.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.fetcher.robots.robots_patterns import READINGS, RuleSet, compile_rules, is_plain, path_readings, url_path

__all__ = ["MAX_LINE_BYTES", "RobotsRules", "token_readings"]

MAX_LINE_BYTES = 2083 * 8 - 1
"""Bytes of one line that are read (Google's parser: eight times the longest URL browsers accept)."""

_UTF8_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")
_WHITE = " \t\x0b\x0c"
_GOOGLE_AGENT = re.compile(r"[A-Za-z_-]*")
_PRODUCT = re.compile(r"[\w.-]*")
_WORDS = re.compile(r"[^\s,;()]+")
_USER_AGENT, _ALLOW, _DISALLOW, _SITEMAP, _CRAWL_DELAY, _REQUEST_RATE = range(6)
_KEYS: tuple[tuple[str, int], ...] = (
    # The keys, and the misspellings of them that Google's and crawler-commons' parsers accept.
    *((k, _USER_AGENT) for k in (
        "user-agent", "useragent", "user agent", "useg-agent", "ser-agent", "users-agent", "user-agnet")),
    ("allow", _ALLOW),
    *((k, _DISALLOW) for k in (
        "disallow", "desallow", "dissallow", "dissalow", "disalow", "dssalow", "dsallow", "diasllow", "disallaw",
        "diallow", "disllow")),
    ("sitemap", _SITEMAP), ("site-map", _SITEMAP),
    *((k, _CRAWL_DELAY) for k in ("crawl-delay", "crawldelay", "crawl delay", "clawl-delay", "craw-delay",
                                  "crawl-deley")),
    ("request-rate", _REQUEST_RATE), ("requestrate", _REQUEST_RATE), ("request rate", _REQUEST_RATE),
)
_TAG = re.compile(r"<[^<>]*>")
_THREE_WORDS_NO_COLON = re.compile(rb"(?m)^[ \t]*[^\s:#]+[ \t]+[^\s:#]+[ \t]+[^\s:#][^:\r\n]*$")
_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*([smhd]?)(?![a-z])", re.IGNORECASE)
_RATE_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@functools.lru_cache(maxsize=512)
def _key_type(key: str) -> int | None:
    key = key.lower()
    for prefix, kind in _KEYS:
        if key.startswith(prefix):
            return kind
    return None


@dataclass
class _Group:
    google_names: set[str]
    word_names: set[str]
    """The names of all the words of the group's user-agent lines."""
    lead_names: dict[str, None]
    """The name of the first word of each of its user-agent lines, in file order."""
    rules: list[tuple[bool, str]]
    delays: list[float]
    closed: bool = False


def _agent_names(value: str) -> tuple[str, list[str]]:
    """Google's reading of a user-agent value, and the names of its words (the ``*`` of a word kept)."""
    if value == "*" or (value.startswith("*") and value[1:2].isspace()):
        google = "*"
    else:
        match = _GOOGLE_AGENT.match(value)
        google = (match.group(0) if match else "").lower()
    words: list[str] = []
    for word in _WORDS.findall(value):
        if word == "*":
            words.append("*")
            continue
        product = _PRODUCT.match(word)
        name = (product.group(0) if product else "").lower().rstrip(".")
        if name:
            words.append(name)
    return google, words


def token_readings(user_agent_token: str) -> tuple[str, ...]:
    """The names we answer to: each product token in our token (without its version), lower case.

    A token that is not one word (``Foo Bar``, a whole User-Agent header) is also read as it is.
    """
    token = user_agent_token.strip().lower()
    words = _WORDS.findall(token)
    readings = [] if len(words) == 1 else [token]
    for word in words:
        product = _PRODUCT.match(word)
        name = "*" if word == "*" else (product.group(0) if product else "").rstrip(".")
        if name and name not in readings:
            readings.append(name)
    return tuple(readings) or (token,)


def _decode(body: bytes) -> bytes:
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return body.decode("utf-16", errors="replace").encode("utf-8")
    skip = 0
    while skip < 3 and skip < len(body) and body[skip] == _UTF8_BOM[skip]:
        skip += 1
    return body[skip:]


def _lines(body: bytes, lenient: bool) -> Iterable[str]:
    """The lines, as UTF-8 (octets that are not kept as lone surrogates); leniently, such a line as cp1252."""
    for raw in _LINE_END.split(_decode(body)):
        if len(raw) > MAX_LINE_BYTES:
            raw = raw[:MAX_LINE_BYTES]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            yield raw.decode("cp1252", "replace") if lenient else raw.decode("utf-8", "surrogateescape")


def _key_value(line: str, lenient: bool) -> tuple[str, str] | None:
    hash_at = line.find("#")
    if hash_at >= 0:
        line = line[:hash_at]
    white = None if lenient else _WHITE  # leniently, any Unicode space (a no-break space after a path...)
    if lenient:
        line = _TAG.sub("", line)
    line = line.strip(white)
    if not line:
        return None
    colon = line.find(":")
    if colon < 0 and lenient:
        lower = line.lower()
        for key, _ in _KEYS:
            if lower.startswith(key) and lower[len(key) : len(key) + 1] in (" ", "\t"):
                return key, line[len(key) :].strip(white)
        return None
    if colon < 0:
        parts = line.split(None, 1)
        if len(parts) != 2 or len(parts[1].split()) != 1:
            return None
        key, value = parts
    else:
        key, value = line[:colon], line[colon + 1 :]
    key = key.strip(white)
    return (key, value.strip(white)) if key else None


def _delay(kind: int, value: str) -> float | None:
    if kind == _CRAWL_DELAY:
        try:
            seconds = float(value.split()[0]) if value.split() else math.nan
        except ValueError:
            return None
    else:
        match = _RATE.match(value)
        if match is None or int(match.group(1)) == 0:
            return None
        seconds = float(match.group(2)) * _RATE_UNITS[match.group(3).lower()] / int(match.group(1))
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _groups(body: bytes, lenient: bool = False) -> tuple[list[_Group], list[str]]:
    """The groups and sitemaps of a file; ``lenient`` also reads lines with HTML tags or without a colon."""
    groups: list[_Group] = []
    sitemaps: list[str] = []
    current: _Group | None = None
    for line in _lines(body, lenient):
        pair = _key_value(line, lenient)
        if pair is None:
            continue
        kind = _key_type(pair[0])
        value = pair[1]
        if kind == _USER_AGENT:
            if current is None or current.closed:
                current = _Group(set(), set(), {}, [], [])
                groups.append(current)
            google, words = _agent_names(value)
            current.google_names.add(google)
            current.word_names.update(words)
            if words:
                current.lead_names[words[0]] = None
        elif kind in (_ALLOW, _DISALLOW):
            if current is not None:
                current.closed = True
                current.rules.append((kind == _ALLOW, value))
        elif kind == _SITEMAP:
            if value and value not in sitemaps:
                sitemaps.append(value)
        elif kind in (_CRAWL_DELAY, _REQUEST_RATE) and current is not None:
            delay = _delay(kind, value)
            if delay is not None:
                current.delays.append(delay)
    return groups, sitemaps


_DIALECTS = ("google", "words", "prefix", "first")
"""How a user-agent line is matched to our name: Google's name, any of its words, the longest line's first
name that begins our name (protego), the first such name in the file (CPython, which takes the first group
that applies; groups of that same name are merged here)."""


def _naming(groups: Sequence[_Group], dialect: str, name: str) -> list[_Group]:
    if dialect == "google":
        return [g for g in groups if name in g.google_names]
    if dialect == "words":
        return [g for g in groups if name in g.word_names]
    starting = [n for g in groups for n in g.lead_names if n != "*" and name.startswith(n)]  # in file order
    if not starting:
        return []
    chosen = max(starting, key=len) if dialect == "prefix" else starting[0]
    return [g for g in groups if chosen in g.lead_names]


def _applying(groups: Sequence[_Group], dialect: str, name: str) -> list[_Group]:
    """The groups that apply to ``name`` in ``dialect``: those naming it, else the ``*`` groups."""
    return _naming(groups, dialect, name) or [
        g for g in groups if "*" in (g.google_names if dialect == "google" else g.word_names)
    ]


@dataclass(frozen=True)
class RobotsRules:
    """What one robots.txt says to one crawler: ``allowed(url)``, ``crawl_delay``, ``sitemaps``."""

    rule_sets: tuple[tuple[RuleSet, ...], ...]
    """Per path reading (as given, normal form, decoded), the distinct rule sets that apply to us."""
    crawl_delay: float | None
    sitemaps: tuple[str, ...]
    plain_rule_sets: tuple[RuleSet, ...] = ()
    """The distinct rule sets of all readings: a plain path reads the same in each."""
    refuses_all: bool = False
    """The file asks for a longer Crawl-delay than the crawler accepts: nothing is fetched."""
    allows_all: bool = field(init=False, repr=False, compare=False)
    """No rule applies to us in any reading (and the Crawl-delay is accepted): every URL is allowed."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "allows_all", not self.refuses_all and not any(
            rule_set.rules for rule_set in (*self.plain_rule_sets, *(s for sets in self.rule_sets for s in sets))))

    @classmethod
    def parse(cls, body: bytes, user_agent_token: str, *, max_crawl_delay: float = math.inf) -> RobotsRules:
        """The rules of ``body`` for ``user_agent_token``.

        A crawl delay over ``max_crawl_delay`` is read as "do not crawl" (as crawler-commons does).
        """
        parses = [_groups(body)]
        if b"<" in body or not body.isascii() or _THREE_WORDS_NO_COLON.search(body):
            parses.append(_groups(body, lenient=True))  # otherwise the lenient reading is the same
        chosen: list[tuple[tuple[bool, str], ...]] = []
        delays: list[float] = []
        for groups, _ in parses:
            for name in token_readings(user_agent_token):
                for dialect in _DIALECTS:
                    applying = _applying(groups, dialect, name)
                    rules = tuple(rule for group in applying for rule in group.rules)
                    if rules not in chosen:
                        chosen.append(rules)
                    delays.extend(d for group in applying for d in group.delays)
        compiled = [compile_rules(rules) for rules in chosen]
        rule_sets = tuple(tuple(dict.fromkeys(sets[reading] for sets in compiled)) for reading in READINGS)
        plain = tuple(dict.fromkeys(rule_set for sets in rule_sets for rule_set in sets))
        delay = max(delays) if delays else None
        refuses = delay is not None and delay > max_crawl_delay
        return cls(rule_sets, delay, tuple(parses[0][1]), plain, refuses)

    def allowed(self, url: str) -> bool:
        """Whether every reading allows ``url`` (see the module docstring)."""
        if self.allows_all:  # the common file with no rule for us: no reading of the URL needed
            return True
        path, fragment = url_path(url)
        if path == "/robots.txt":
            return True
        if self.refuses_all:
            return False
        if is_plain(path, fragment):
            return all(rule_set.allowed(path) for rule_set in self.plain_rule_sets)
        for reading, reading_path in path_readings(path, fragment):
            for rule_set in self.rule_sets[reading]:
                if not rule_set.allowed(reading_path):
                    return False
        return True
