"""robots.txt patterns and paths: how each is read, in three readings, and how a pattern matches a path.

* *as given* (Google's parser: the caller percent-encodes the URL): the path as
  it is in the URL, with the hex digits of its escapes in upper case; the
  pattern with octets outside US-ASCII percent-encoded;
* *normal form* (RFC 3986): octets outside US-ASCII and unsafe characters
  percent-encoded, hex digits in upper case, encoded unreserved characters
  decoded, a stray ``%`` as ``%25``; a literal ``*`` or ``$`` of a path as
  ``%2A``/``%24`` (the way a pattern has to write them); the path is also
  read as the HTTP client sends it (dot segments removed, an empty query
  dropped); a pattern without its leading ``/`` gets one;
* *decoded* (CPython's parser): the normal form, with percent-encoded
  reserved characters of the path (before the query) decoded, a ``#`` of
  the URL kept as part of it, and a ``?`` inside the query read as ``%3F``.

A path made only of characters that every reading leaves alone (most paths)
is *plain*: it reads the same in all three.

A pattern matches a path from its start: ``*`` matches any characters, a
final ``$`` the end of the path. Of the rules that match, the longest
pattern decides, an allow winning a tie (RFC 9309 section 2.2.2).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "DECODED", "LITERAL", "NORMAL", "READINGS", "Rule", "RuleSet", "compile_rules", "is_plain", "path_readings",
    "pattern_readings", "url_path",
]

_HEX = "0123456789ABCDEF"
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_URI_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=")
_RESERVED_IN_PATH = frozenset(b":/#[]@!&'()+,;=")
"""Reserved characters the decoded reading decodes in a path (``?``, ``*`` and ``$`` keep their meaning)."""
_PLAIN_PATTERN = re.compile(r"/[A-Za-z0-9\-._~!&'()+,;=:@/?*]*\$?")
"""A pattern that every reading leaves as it is (when it has at most one ``?``)."""
_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~!&'()+,;=:@/?]*")
"""Characters of a path that every reading leaves as they are (when no dot segment or empty query occurs)."""


def _octets(text: str) -> bytes:
    """The octets of a text decoded with ``surrogateescape`` (a URL may hold any other lone surrogate too)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _pct(byte: int) -> str:
    return "%" + _HEX[byte >> 4] + _HEX[byte & 15]


def _literal_pattern(pattern: str) -> str:
    """Google's escaping of a pattern: octets outside US-ASCII percent-encoded, hex digits upper-cased."""
    if pattern.isascii() and "%" not in pattern:
        return pattern
    data = _octets(pattern)
    out: list[str] = []
    i = 0
    while i < len(data):
        byte = data[i]
        if byte == 0x25 and _is_hex(data, i + 1):
            out.append("%" + chr(data[i + 1]).upper() + chr(data[i + 2]).upper())
            i += 3
            continue
        out.append(_pct(byte) if byte >= 0x80 else chr(byte))
        i += 1
    return "".join(out)


def _is_hex(data: bytes, at: int) -> bool:
    return at + 1 < len(data) and chr(data[at]) in "0123456789abcdefABCDEF" and chr(data[at + 1]) in (
        "0123456789abcdefABCDEF"
    )


def _normal(text: str, *, pattern: bool, decode_reserved: bool) -> str:
    """RFC 3986 normal form of a path (or of a pattern, whose ``*`` and final ``$`` stay special).

    ``decode_reserved`` also decodes percent-encoded reserved characters before the query.
    """
    data = _octets(text)
    out: list[str] = []
    in_query = False
    last = len(data) - 1
    i = 0
    while i < len(data):
        byte = data[i]
        if byte == 0x25:  # %
            if _is_hex(data, i + 1):
                value = int(data[i + 1 : i + 3], 16)
                i += 3
                if value in _UNRESERVED or (decode_reserved and not in_query and value in _RESERVED_IN_PATH):
                    out.append(chr(value))
                else:
                    out.append(_pct(value))
                continue
            out.append("%25")
        elif pattern and (byte == 0x2A or (byte == 0x24 and i == last)):
            out.append(chr(byte))  # the wildcard, the end anchor
        elif byte in (0x2A, 0x24):
            out.append(_pct(byte))  # a literal * or $ (written %2A or %24 in a pattern)
        elif byte == 0x3F and in_query and decode_reserved:
            out.append("%3F")  # in a query, "?" and "%3F" are the same character to CPython
        elif byte in _URI_CHARS:
            if byte == 0x3F:
                in_query = True
            out.append(chr(byte))
        else:
            out.append(_pct(byte))
        i += 1
    return "".join(out)


_ESCAPE = re.compile(r"%[0-9a-f][0-9a-fA-F]|%[0-9A-F][0-9a-f]")


def _upper(match: re.Match[str]) -> str:
    return match.group(0).upper()


def _remove_dot_segments(path: str) -> str:
    if "/." not in path:
        return path
    query = ""
    if "?" in path:
        path, query = path.split("?", 1)
        query = "?" + query
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        if segment == ".":
            if index == len(segments) - 1:
                out.append("")
            continue
        if segment == "..":
            if len(out) > 1:
                out.pop()
            if index == len(segments) - 1:
                out.append("")
            continue
        out.append(segment)
    return "/".join(out) + query


_PATH_START = re.compile(r"[/?;#]")
"""Where the authority ends, and what may not come before a scheme's ``://``."""


def url_path(url: str) -> tuple[str, str | None]:
    """``(path with params and query, fragment or None)`` of a URL as given; ``/`` when it has no path."""
    start = 0
    scheme_end = url.find("://")
    if scheme_end >= 0 and _PATH_START.search(url, 0, scheme_end) is None:
        start = scheme_end + 3
    elif url.startswith("//"):
        start = 2
    elif url.startswith("/"):
        start = -1  # a path already
    if start >= 0:
        path_start = _PATH_START.search(url, start)
        url = url[path_start.start():] if path_start is not None else ""
    fragment: str | None = None
    hash_at = url.find("#")
    if hash_at >= 0:
        url, fragment = url[:hash_at], url[hash_at + 1 :]
    if not url:
        return "/", fragment
    if not url.startswith("/"):
        url = "/" + url
    return url, fragment


LITERAL, NORMAL, DECODED = range(3)
READINGS = (LITERAL, NORMAL, DECODED)


def is_plain(path: str, fragment: str | None) -> bool:
    """Whether every reading of this path is the path itself."""
    return (
        fragment is None
        and _PLAIN_PATH.fullmatch(path) is not None
        and "/." not in path
        and not path.endswith("?")
        and path.count("?") < 2
    )


def path_readings(path: str, fragment: str | None) -> list[tuple[int, str]]:
    """The ``(reading, path)`` pairs of a path that is not plain."""
    sent = _remove_dot_segments(path)
    if sent.endswith("?"):
        sent = sent[:-1]
    normal = _normal(path, pattern=False, decode_reserved=False)
    pairs = [(LITERAL, _ESCAPE.sub(_upper, path)), (NORMAL, normal)]
    sent_normal = _normal(sent, pattern=False, decode_reserved=False)
    if sent_normal != normal:
        pairs.append((NORMAL, sent_normal))
    decoded = _normal(path if fragment is None else path + "#" + fragment, pattern=False, decode_reserved=True)
    pairs.append((DECODED, decoded))
    return pairs


def pattern_readings(value: str) -> tuple[str, str, str]:
    """A rule's pattern in each reading: as written (Google's escaping), in normal form, decoded."""
    if _PLAIN_PATTERN.fullmatch(value) and value.count("?") < 2:
        return value, value, value  # the same in every reading
    literal = _literal_pattern(value)
    if value[0] not in "/*":
        value = "/" + value  # a path pattern starts with "/" (RFC 9309); some files leave it out
    return literal, _normal(value, pattern=True, decode_reserved=False), _normal(value, pattern=True,
                                                                                 decode_reserved=True)


@dataclass(frozen=True)
class Rule:
    """One allow or disallow pattern, ready to match."""

    allow: bool
    pattern: str
    priority: int
    head: str
    middle: tuple[str, ...]
    tail: str | None
    """The last piece after a ``*``; None when the pattern has no wildcard."""
    anchored: bool

    @classmethod
    def of(cls, allow: bool, pattern: str, priority: int | None = None) -> Rule:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        pieces = body.split("*")
        head = pieces[0]
        tail = pieces[-1] if len(pieces) > 1 else None
        middle = tuple(p for p in pieces[1:-1] if p)
        return cls(allow, pattern, len(pattern) if priority is None else priority, head, middle, tail, anchored)

    def matches(self, path: str) -> bool:
        if not path.startswith(self.head):
            return False
        if self.tail is None:
            return not self.anchored or len(path) == len(self.head)
        at = len(self.head)
        for piece in self.middle:
            found = path.find(piece, at)
            if found < 0:
                return False
            at = found + len(piece)
        if self.anchored:
            return path.endswith(self.tail) and len(path) - len(self.tail) >= at
        return path.find(self.tail, at) >= 0


_INDEXED_RULES = 32
"""A rule set with more rules than this looks up the rules whose fixed head begins the path."""


@dataclass(frozen=True, eq=False)
class RuleSet:
    """The rules of the groups that apply to us, in one reading; longest match wins, allow on a tie."""

    rules: tuple[Rule, ...]
    """Longest first, allows before disallows of the same length: the first rule that matches decides."""
    _by_head: dict[str, list[int]] = field(init=False, repr=False)
    _head_lengths: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_head: dict[str, list[int]] = {}
        if len(self.rules) > _INDEXED_RULES:
            for position, rule in enumerate(self.rules):
                by_head.setdefault(rule.head, []).append(position)
        object.__setattr__(self, "_by_head", by_head)
        object.__setattr__(self, "_head_lengths", tuple(sorted({len(head) for head in by_head})))

    def allowed(self, path: str) -> bool:
        if self._by_head:
            return self._allowed_indexed(path)
        for rule in self.rules:
            if rule.matches(path):
                return rule.allow
        return True

    def _allowed_indexed(self, path: str) -> bool:
        candidates: list[int] = []
        for length in self._head_lengths:
            if length > len(path):
                break
            positions = self._by_head.get(path[:length])
            if positions:
                candidates.extend(positions)
        for position in sorted(candidates):
            rule = self.rules[position]
            if rule.matches(path):
                return rule.allow
        return True


def _rules(allow: bool, pattern: str) -> list[Rule]:
    rules = [Rule.of(allow, pattern)]
    if allow:
        index_at = pattern.rfind("/")
        if pattern[index_at:].startswith("/index.htm"):
            # Google: allowing a directory's index page allows the directory itself.
            rules.append(Rule.of(True, pattern[: index_at + 1] + "$"))
    elif pattern.endswith("$"):
        # The final "$" may have been meant as a literal dollar sign: that path is disallowed too.
        rules.append(Rule.of(False, pattern[:-1] + "%24", len(pattern)))
    return rules


def compile_rules(rules: Iterable[tuple[bool, str]]) -> tuple[RuleSet, ...]:
    """One rule set per reading; a reading whose patterns are those of the one before shares its set."""
    per_reading: tuple[list[Rule], ...] = ([], [], [])
    same = [True, True, True]
    for allow, value in rules:
        if not value:
            continue  # an empty pattern matches nothing
        patterns = pattern_readings(value)
        compiled = _rules(allow, patterns[0])
        per_reading[0].extend(compiled)
        for reading in (NORMAL, DECODED):
            if patterns[reading] != patterns[reading - 1]:
                same[reading] = False
            if patterns[reading] != patterns[0]:
                per_reading[reading].extend(_rules(allow, patterns[reading]))
            else:
                per_reading[reading].extend(compiled)
    sets: list[RuleSet] = []
    for reading, out in enumerate(per_reading):
        if reading and same[reading]:
            sets.append(sets[-1])
            continue
        out.sort(key=lambda r: (-r.priority, not r.allow))
        sets.append(RuleSet(tuple(out)))
    return tuple(sets)
