"""URL normalisation shared by every service (what identifies a normalised URL: ``libs.common.url_keys``).

Every URL that enters the system (seeds, extracted links, redirect targets,
sitemap entries) goes through :func:`normalize_url`, so that two spellings of
the same resource (RFC 3986 section 6 equivalence plus a few crawler rules)
become one string, one fingerprint and one row in the link base.

The rules, in the order they are applied:

1. Leading/trailing C0 controls and spaces are stripped and tabs/newlines
   removed anywhere (as browsers do); backslashes before the query become
   slashes for http(s) URLs, and slashes after ``http:``/``https:`` or at the
   start of a reference are read as browsers read them (``http:example.com``
   and ``http:///example.com`` name the host ``example.com``).
2. The reference is resolved against ``base`` (RFC 3986 section 5).
3. Scheme and host are lowercased; internationalised hosts are IDNA-encoded
   (UTS 46, non-transitional, as browsers do, symbol domains included); a
   trailing dot on the host is removed; IP literals are written in their
   canonical form, and a host ending in a number must be one (``1.2.3.08`` is
   refused); the port loses its leading zeros, the default port is dropped,
   port 0 is refused.
4. Percent-encoding is normalised: escapes of unreserved characters are
   decoded, other escapes get uppercase hex, characters that may not appear
   literally (controls, space, non-ASCII, ``"<>\\^`{|}``) are UTF-8 encoded
   and escaped, reserved characters are kept as they are, except ``'`` in the
   query, which browsers send escaped.
5. Dot segments are removed; an empty path becomes ``/``. The path's case and
   trailing slashes are kept.
6. The fragment is dropped; tracking and session parameters are removed from
   the query (and from ``;name=value`` path parameters); empty query pieces
   and an empty query are dropped; the query is optionally sorted by name.

User information (``user:pass@``) is kept, percent-normalised like the path, an
empty password (``user:@``) or empty user information (``:@``) dropped and the
``@`` and ``:`` inside it escaped. ``docs/urls.md`` gives the reason for each rule
and how the normal form agrees with other projects' URL test suites.

The configurable part (parameters stripped, query sorting, length limit) is a
:class:`UrlPolicy`; :class:`UrlSettings` reads it from the environment in a
service's ``main()``. Why not w3lib's ``canonicalize_url``: it gets 26 of the 49
rows of our rule table wrong, some by naming another resource (``%3A`` decoded
in a path); see ``docs/urls.md`` and ``bench/extractor_url_normaliser.py``.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import idna

from libs.common.settings import setting
from libs.common.url_keys import key_text, normalized_fingerprint, normalized_host

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_POLICY",
    "InvalidUrl",
    "UrlPolicy",
    "UrlSettings",
    "host_if_normal",
    "install_policy",
    "installed_policy",
    "normal_form",
    "normalize_url",
    "registered_domain",
    "url_fingerprint",
    "url_host",
    "url_key",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_TAB_NEWLINE_RE = re.compile(r"[\t\n\r]")
_C0_AND_SPACE = "".join(chr(i) for i in range(0x21))
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_KEEP = _UNRESERVED | _RESERVED
_HEX = frozenset("0123456789abcdefABCDEF")
_HOST_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_\-]{0,61}[a-z0-9_])?")
_PORT_RE = re.compile(r"[0-9]+")
_IPV4_PART_RE = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*")
# WHATWG's "ends in a number": such a host must be an IPv4 address (``foo.09`` is refused).
_NUMBER_LABEL_RE = re.compile(r"[0-9]+|0x[0-9a-f]*")
_JOINERS = ("\u200c", "\u200d")
# Work on an input at most this many times longer than the policy's limit:
# enough for whitespace and removable parameters, small enough to stay cheap.
_RAW_LENGTH_FACTOR = 4
_MAX_REASON_SCHEME = 32
_DEFAULT_MAX_LENGTH = 2048
# Click identifiers of ad and mail platforms, analytics cross-domain markers; session ids.
_CLICK_IDS = ("utm_*", "fbclid", "gclid", "gbraid", "wbraid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid")
_SESSION_IDS = ("sessionid", "phpsessid", "jsessionid", "aspsessionid", "sid", "oscsid", "zenid")
_DEFAULT_STRIP_PARAMS = (*_CLICK_IDS, "_ga", "_gl", *_SESSION_IDS)


class InvalidUrl(ValueError):
    """A URL that cannot be crawled; ``reason`` is a short, stable code for metrics and storage.

    Codes: ``empty``, ``too_long``, ``malformed``, ``no_scheme`` (relative
    reference without a base), ``unsupported_scheme:<scheme>``, ``no_host``,
    ``bad_host``, ``bad_idn``, ``bad_port``.
    """

    def __init__(self, reason: str, url: str = "") -> None:
        super().__init__(f"{reason}: {url[:200]!r}" if url else reason)
        self.reason = reason
        self.url = url


@functools.lru_cache(maxsize=64)
def _param_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    exact = frozenset(p.lower() for p in patterns if not p.endswith("*"))
    prefixes = tuple(p[:-1].lower() for p in patterns if p.endswith("*"))

    def matches(name: str) -> bool:
        lowered = name.lower()
        return lowered in exact or (bool(prefixes) and lowered.startswith(prefixes))

    return matches


@dataclass(frozen=True)
class UrlPolicy:
    """The configurable part of normalisation.

    ``strip_params`` are query (and path) parameter names removed from every
    URL, compared case-insensitively; a name ending in ``*`` is a prefix.
    """

    strip_params: tuple[str, ...] = _DEFAULT_STRIP_PARAMS
    sort_query: bool = False
    max_length: int = _DEFAULT_MAX_LENGTH
    allowed_schemes: tuple[str, ...] = ("http", "https")

    def __post_init__(self) -> None:
        # Computed once: a policy is hashed (cache keys) and asked about parameters per URL.
        object.__setattr__(self, "_matcher", _param_matcher(self.strip_params))
        object.__setattr__(
            self, "_hash", hash((self.strip_params, self.sort_query, self.max_length, self.allowed_schemes))
        )

    def __hash__(self) -> int:
        value: int = self.__dict__["_hash"]
        return value

    def strips(self, name: str) -> bool:
        """Whether the (percent-decoded) parameter ``name`` is removed by this policy."""
        matches: Callable[[str], bool] = self.__dict__["_matcher"]
        return matches(name)


DEFAULT_POLICY = UrlPolicy()
_process_policy = DEFAULT_POLICY


def install_policy(policy: UrlPolicy) -> None:
    """Makes ``policy`` this process's default, so every service normalises URLs the same way.

    Called once by each service's entry point (``libs.common.service.run_service``) with the
    policy of :class:`UrlSettings`; calls that pass a policy explicitly are unaffected.
    """
    global _process_policy
    _process_policy = policy


def installed_policy() -> UrlPolicy:
    return _process_policy


@dataclass(frozen=True)
class UrlSettings:
    """The normalisation policy, from the environment (see :class:`UrlPolicy`)."""

    strip_params: tuple[str, ...] = setting(
        "TRAWL_URL_STRIP_PARAMS",
        _DEFAULT_STRIP_PARAMS,
        "Query and path parameters removed from every URL, comma-separated, case-insensitive; name* is a prefix.",
    )
    sort_query: bool = setting(
        "TRAWL_URL_SORT_QUERY", False, "Sort query parameters by name (stable), so that ?b=1&a=2 equals ?a=2&b=1."
    )
    max_length: int = setting(
        "TRAWL_URL_MAX_LENGTH",
        _DEFAULT_MAX_LENGTH,
        "Longest normalised URL accepted; longer ones are bad links (too_long).",
    )

    def policy(self) -> UrlPolicy:
        if self.max_length < 16:
            raise ValueError(f"TRAWL_URL_MAX_LENGTH={self.max_length} is too small for any URL")
        return UrlPolicy(self.strip_params, self.sort_query, self.max_length)


def _clean(raw: str) -> str:
    """Strip what browsers strip: outer C0 controls and spaces, inner tabs and newlines."""
    raw = raw.strip(_C0_AND_SPACE)
    if "\t" in raw or "\n" in raw or "\r" in raw:
        raw = _TAB_NEWLINE_RE.sub("", raw)
    return raw


def _fix_backslashes(url: str) -> str:
    """Browsers read ``\\`` as ``/`` before the query in http(s) and relative URLs."""
    if "\\" not in url:
        return url
    match = _SCHEME_RE.match(url)
    if match and match.group(0)[:-1].lower() not in _DEFAULT_PORTS:
        return url
    cut = len(url)
    for stop in ("?", "#"):
        pos = url.find(stop)
        if pos != -1:
            cut = min(cut, pos)
    return url[:cut].replace("\\", "/") + url[cut:]


def _browser_slashes(url: str, base: str | None) -> str:
    """Read the slashes after ``http:``/``https:`` and at the start of a reference as browsers do.

    WHATWG's URL parser, for http(s): ``http:example.com`` and ``http:/example.com`` name the
    host ``example.com`` (unless the base has the same scheme: then they are relative to it),
    and any run of two or more slashes opens the authority (``http:///x`` and ``///x``
    against an http(s) base name the host ``x``). Called after :func:`_fix_backslashes`.
    """
    match = _SCHEME_RE.match(url)
    if match is not None:
        scheme = match.group(0)[:-1]
        if scheme.lower() not in _DEFAULT_PORTS:
            return url
        rest = url[len(scheme) + 1 :]
        if not rest.startswith("//") and base is not None:
            base_scheme = _SCHEME_RE.match(base.lstrip(_C0_AND_SPACE))
            if base_scheme is not None and base_scheme.group(0)[:-1].lower() == scheme.lower():
                return url  # relative to the base, which the join does
        return f"{scheme}://{rest.lstrip('/')}"
    if url.startswith("//") and base is not None:
        authority = url.lstrip("/")
        if not authority or authority[0] in "?#":
            raise InvalidUrl("no_host", url)
        return "//" + authority
    return url


def _normalize_escapes(component: str) -> str:
    """Normalise percent-encoding in one path, query or userinfo component."""
    out: list[str] = []
    i = 0
    n = len(component)
    while i < n:
        ch = component[i]
        if ch == "%":
            if i + 2 < n and component[i + 1] in _HEX and component[i + 2] in _HEX:
                decoded = chr(int(component[i + 1 : i + 3], 16))
                out.append(decoded if decoded in _UNRESERVED else "%" + component[i + 1 : i + 3].upper())
                i += 3
                continue
            out.append("%25")
        elif ch in _KEEP:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, for an absolute path."""
    if "." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for seg in segments[1:]:
        if seg == ".":
            continue
        if seg == "..":
            if output:
                output.pop()
            continue
        output.append(seg)
    # A trailing "." or ".." leaves a directory: keep the final slash.
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _strip_path_params(path: str, policy: UrlPolicy) -> str:
    """Remove ``;jsessionid=...``-style path parameters named in the policy."""
    if ";" not in path:
        return path
    segments = []
    for segment in path.split("/"):
        if ";" in segment:
            head, *params = segment.split(";")
            kept = [p for p in params if not policy.strips(_unescape_name(p.split("=", 1)[0]))]
            segment = ";".join([head, *kept])
        segments.append(segment)
    return "/".join(segments)


def _unescape_name(name: str) -> str:
    """Decode the escapes of a parameter name, enough to compare it with the policy."""
    return _percent_decode(name) if "%" in name else name


def _percent_decode(text: str) -> str:
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and i + 2 < len(text) and text[i + 1] in _HEX and text[i + 2] in _HEX:
            raw.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(text[i].encode("utf-8", "surrogatepass"))
            i += 1
    return raw.decode("utf-8", "replace")


def _normalize_query(query: str, policy: UrlPolicy) -> str:
    pieces = [p for p in query.split("&") if p]
    pieces = [p for p in pieces if not policy.strips(_unescape_name(p.split("=", 1)[0]))]
    if policy.sort_query:
        pieces.sort(key=lambda p: p.split("=", 1)[0])
    return "&".join(pieces)


def _normalize_host(host: str, url: str) -> str:
    """Lowercase, IDNA-encode and validate a host (without port); IPv6 comes with brackets."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise InvalidUrl("malformed", url)
        if "%" in host:  # a zone identifier means nothing off the local link
            raise InvalidUrl("bad_host", url)
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            raise InvalidUrl("bad_host", url) from None
    if "%" in host:
        host = _percent_decode(host)
    host = host.rstrip(".")
    if not host:
        raise InvalidUrl("no_host", url)
    host = host.lower() if host.isascii() else _domain_to_ascii(host, url).rstrip(".")
    if len(host) > 253:
        raise InvalidUrl("bad_host", url)
    labels = host.split(".")
    for label in labels:
        if not _HOST_LABEL_RE.fullmatch(label):
            raise InvalidUrl("bad_host", url)
        if label.startswith("xn--"):
            try:
                label[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                raise InvalidUrl("bad_idn", url) from None
    if _NUMBER_LABEL_RE.fullmatch(labels[-1]):
        return _parse_ipv4(labels, url)
    return host


def _domain_to_ascii(host: str, url: str) -> str:
    """IDNA-encode a non-ASCII host as browsers do (UTS 46, non-transitional).

    IDNA2008 where it holds; otherwise the UTS 46 mapping alone, as WHATWG's "domain to
    ASCII" does, so that symbol domains that browsers reach (U+2603 SNOWMAN ``.net``) are
    ``xn--n3h.net`` rather than refused. Either way a label must be in NFC, must not
    start with a combining mark, must pass the bidi rule and may not hold a joiner
    outside IDNA2008's contexts.
    """
    try:
        return idna.encode(host, uts46=True, transitional=False, std3_rules=False).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        pass
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
        labels = []
        for label in mapped.split("."):
            if label.isascii():
                labels.append(label.lower())
                continue
            if any(joiner in label for joiner in _JOINERS):
                raise InvalidUrl("bad_idn", url)
            idna.check_nfc(label)
            idna.check_initial_combiner(label)
            idna.check_bidi(label)
            labels.append("xn--" + label.encode("punycode").decode("ascii"))
    except (idna.IDNAError, UnicodeError, ValueError):
        raise InvalidUrl("bad_idn", url) from None
    return ".".join(labels)


def _parse_ipv4(labels: list[str], url: str) -> str:
    """Parse a host ending in a number as browsers do (WHATWG): ``0x7f.1`` is ``127.0.0.1``."""
    if len(labels) > 4:
        raise InvalidUrl("bad_host", url)
    numbers: list[int] = []
    for label in labels:
        if not _IPV4_PART_RE.fullmatch(label):
            raise InvalidUrl("bad_host", url)
        if label[:2] == "0x":
            numbers.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label[0] == "0":
            numbers.append(int(label[1:], 8))
        else:
            numbers.append(int(label))
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise InvalidUrl("bad_host", url)
    value = last
    for index, n in enumerate(leading):
        value += n << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _normalize_userinfo(userinfo: str) -> str:
    """``user[:password]`` with an empty password dropped (``a:@`` is ``a@``, ``:@`` nothing) and
    the ``@`` and ``:`` that belong to the name or password escaped, as WHATWG writes them."""
    user, _, password = userinfo.partition(":")
    user = _normalize_escapes(user)
    password = _normalize_escapes(password)
    if "@" in user:
        user = user.replace("@", "%40")
    if "@" in password or ":" in password:
        password = password.replace("@", "%40").replace(":", "%3A")
    return f"{user}:{password}" if password else user


def _split_authority(netloc: str, url: str) -> tuple[str, str, str]:
    """Split ``[userinfo@]host[:port]`` into its three parts (port may be empty)."""
    userinfo, _, hostport = netloc.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        if end == -1:
            raise InvalidUrl("malformed", url)
        host, rest = hostport[: end + 1], hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidUrl("malformed", url)
        return userinfo, host, rest[1:]
    host, _, port = hostport.partition(":")
    return userinfo, host, port


def normalize_url(url: str, base: str | None = None, policy: UrlPolicy | None = None) -> str:
    """Resolve ``url`` against ``base`` and return its normal form (see the module docstring).

    ``policy`` defaults to the process's installed policy (:func:`install_policy`).

    An empty ``url`` with a base is a same-document reference: the base's
    normal form. Raises :class:`InvalidUrl` (and nothing else) when the result
    cannot be crawled: unsupported scheme, no host, bad port, invalid IDN, too
    long (more than ``policy.max_length`` characters once normalised).
    """
    if policy is None:
        policy = _process_policy
    cleaned = _clean(url)
    if not cleaned and not base:
        raise InvalidUrl("empty", url)
    if len(cleaned) > policy.max_length * _RAW_LENGTH_FACTOR:
        raise InvalidUrl("too_long", url)
    cleaned = _fix_backslashes(cleaned)
    # The commonest link, "http(s)://host...", needs no reading of slashes.
    if not cleaned.startswith(("http://", "https://")) or cleaned.startswith("/", 7 if cleaned[4] == ":" else 8):
        cleaned = _browser_slashes(cleaned, base)
    try:
        parts = urlsplit(cleaned)
        # An absolute URL with an authority ignores the base: no join (the commonest link).
        if base is not None and not (
            parts.scheme and (parts.netloc or cleaned.startswith("//", len(parts.scheme) + 1))
        ):
            cleaned = urljoin(_fix_backslashes(_clean(base)), cleaned)
            parts = urlsplit(cleaned)
    except ValueError:
        raise InvalidUrl("malformed", url) from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise InvalidUrl("empty" if not cleaned else "no_scheme", url)
    if scheme not in policy.allowed_schemes:
        raise InvalidUrl(f"unsupported_scheme:{scheme[:_MAX_REASON_SCHEME]}", url)
    if not parts.netloc:
        raise InvalidUrl("no_host", url)

    userinfo, host, port = _split_authority(parts.netloc, url)
    host = _normalize_host(host, url)
    netloc = host
    if port:
        if not _PORT_RE.fullmatch(port) or len(port.lstrip("0")) > 5:
            raise InvalidUrl("bad_port", url)
        port_number = int(port)
        if not 0 < port_number <= 65535:
            raise InvalidUrl("bad_port", url)
        if port_number != _DEFAULT_PORTS.get(scheme):
            netloc = f"{host}:{port_number}"
    if userinfo:
        userinfo = _normalize_userinfo(userinfo)
        if userinfo:
            netloc = f"{userinfo}@{netloc}"

    # Parameters go before dot segments: "..;sid=1" must become ".." first.
    path = _strip_path_params(_normalize_escapes(parts.path or "/"), policy)
    path = _remove_dot_segments(path if path.startswith("/") else "/" + path)
    query = _normalize_query(_normalize_escapes(parts.query), policy) if parts.query else ""
    if "'" in query:  # browsers send it escaped in an http(s) query (WHATWG's special-query set)
        query = query.replace("'", "%27")

    result = f"{scheme}://{netloc}{path}"
    if query:
        result = f"{result}?{query}"
    if len(result) > policy.max_length:
        raise InvalidUrl("too_long", url)
    return result


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
# URLs this matches are already in normal form (normalize_url returns them unchanged; a
# property test checks it): http(s), a lower-case DNS host of letters, digits and hyphens
# ending in an alphabetic top-level label (not an IPv4 address), no port, no user, a path of
# unreserved and sub-delimiter characters only (no escapes, no ";" parameters), no query.
# (The path is "/" then those characters or "/": one character class, no repeated group to backtrack into.)
_ALREADY_NORMAL = re.compile(rf"https?://((?:{_LABEL}\.)+[a-z]{{2,63}})/[A-Za-z0-9._~!$&'()*+,=:@/-]*")


def _has_dot_segment(path: str) -> bool:
    """Whether a path has a "." or ".." segment (normalising would remove it)."""
    if "/." not in path:
        return False
    return any(segment in (".", "..") for segment in path.split("/"))


def host_if_normal(url: str) -> str | None:
    """The host of ``url`` when it is visibly in normal form already (normalising changes nothing), else None.

    A check, not a normalisation: a URL it answers None for may be in normal form too.
    """
    match = _ALREADY_NORMAL.fullmatch(url)
    if match is None:
        return None
    policy = _process_policy  # its strip list and query sorting only touch what the pattern excludes
    host = match.group(1)
    if (
        len(url) <= policy.max_length
        and url[: url.index(":")] in policy.allowed_schemes
        and len(host) <= 253
        and "xn--" not in host
        and not _has_dot_segment(url[match.end(1) :])
    ):
        return host
    return None


def normal_form(url: str) -> str:
    """``normalize_url(url)``, skipping the work for a URL that is visibly in normal form already.

    Links arrive normalised by the extractor (the proto's contract), so most take the short
    path; anything else (escapes, a query, a port, an IDN, dot segments, ...) is normalised.
    """
    return url if host_if_normal(url) is not None else normalize_url(url)


def url_host(url: str) -> str:
    """The normalised host of ``url``, without port (IPv6 addresses without brackets).

    Raises :class:`InvalidUrl` like :func:`normalize_url`.
    """
    return normalized_host(normalize_url(url))


def url_fingerprint(url: str) -> int:
    """Signed 64-bit fingerprint of the normalised URL (:func:`~libs.common.url_keys.normalized_fingerprint`)."""
    return normalized_fingerprint(normalize_url(url))


def url_key(url: str) -> str:
    """The URL fingerprint as 16 lowercase hex digits (unsigned): the Kafka key of URL-keyed topics."""
    return key_text(url_fingerprint(url))


@functools.lru_cache(maxsize=1)
def _tld_extractor() -> Any:
    import tldextract  # imported lazily: building the suffix trie takes a moment

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True)


@functools.lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registrable domain ("eTLD+1") of ``host``, from the bundled public suffix list.

    Private suffixes count (``alice.github.io`` and ``bob.github.io`` are two
    sites). When the suffix is unknown (``.test``, ``localhost``) the last two
    labels are used; an IP address or single label is its own domain; a host
    that is itself a public suffix is returned as is.
    """
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        return host
    if not host or "." not in host or ":" in host:
        return host
    try:
        ipaddress.IPv4Address(host)
        return host
    except ValueError:
        pass
    parts = _tld_extractor().extract_str(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    if parts.suffix:
        return host
    return ".".join(host.split(".")[-2:])
