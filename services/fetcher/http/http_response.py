"""The result of one HTTP fetch, and the header parsing it needs.

:class:`HttpResponse` is a plain value: the HTTP client never raises for
network or protocol problems, it returns a response with ``status == 0`` and
a short, stable ``error`` code instead.
"""

from __future__ import annotations

import datetime
import email.utils
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

__all__ = [
    "ERROR_CONNECT_TIMEOUT",
    "ERROR_DISALLOWED_REDIRECT",
    "ERROR_INVALID_REDIRECT",
    "ERROR_INVALID_URL",
    "ERROR_REDIRECT_LOOP",
    "ERROR_TIMEOUT",
    "ERROR_TOO_MANY_REDIRECTS",
    "NETWORK_ERROR_PREFIXES",
    "HttpExchange",
    "HttpResponse",
    "header_value",
    "header_values",
    "media_type",
    "parse_retry_after",
]

# Error codes (the part before any ":<detail>").
ERROR_TIMEOUT = "timeout"
ERROR_CONNECT_TIMEOUT = "connect_timeout"
ERROR_INVALID_URL = "invalid_url"
ERROR_REDIRECT_LOOP = "redirect_loop"
ERROR_TOO_MANY_REDIRECTS = "too_many_redirects"
ERROR_INVALID_REDIRECT = "invalid_redirect"
ERROR_DISALLOWED_REDIRECT = "disallowed_redirect"
# Codes that mean the server could not be reached or did not answer properly.
NETWORK_ERROR_PREFIXES = (
    ERROR_TIMEOUT,
    ERROR_CONNECT_TIMEOUT,
    "connect_error",
    "dns_error",
    "proxy_error",
    "payload_error",
    "protocol_error",
    "client_error",
    "slow_body",
)

# Retry-After values beyond this are treated as this (one day).
_MAX_RETRY_AFTER = 86_400.0


@dataclass(slots=True)  # not frozen: made for every fetch, and a frozen one costs twice as much to make
class HttpResponse:
    """One fetch of ``url``, after following redirects to ``final_url``.

    ``status`` is 0 when ``error`` is set. ``body`` holds at most the
    client's ``max_body_bytes`` of decoded content (``truncated`` says it was
    cut), and is empty when the content type was not one the client keeps.
    ``redirect_chain`` lists the URLs that answered with a redirect, in order,
    starting with ``url``; it is empty when there was no redirect.
    ``elapsed`` is the time from the first request to the end of the body.
    ``retry_after`` is the Retry-After header in seconds from now, if any.
    """

    url: str
    final_url: str
    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    truncated: bool = False
    elapsed: float = 0.0
    redirect_chain: Sequence[str] = field(default_factory=list)
    error: str = ""
    content_type: str = ""
    retry_after: float | None = None

    @property
    def error_code(self) -> str:
        """``error`` without its ``:<detail>`` part."""
        return self.error.split(":", 1)[0]

    @property
    def is_network_error(self) -> bool:
        """Whether the server could not be reached or did not give a usable answer."""
        return bool(self.error) and self.error_code in NETWORK_ERROR_PREFIXES

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return header_value(self.headers, name)

    def joined_header(self, name: str) -> str:
        """Every value of header ``name``, joined with ``", "`` (``""`` if absent)."""
        return ", ".join(header_values(self.headers, name))


@dataclass(frozen=True)
class HttpExchange:
    """One request and the response it got, as sent and received: what a WARC archive records.

    ``raw_body`` is the body as received (content coding kept, transfer coding
    removed), possibly cut: ``truncated`` is ``""`` or the WARC-Truncated reason
    (``length``: over the cap or a type whose body is not kept; ``time``: too
    slow; ``disconnect``: the connection broke; ``unspecified``: the fetch was
    cancelled, by its total timeout or a handoff).
    """

    url: str
    method: str
    request_headers: Sequence[tuple[str, str]]
    started_at: float
    """Unix time at which the request was sent."""
    status: int
    reason: str
    http_version: str
    headers: Sequence[tuple[str, str]]
    raw_body: bytes
    truncated: str = ""
    remote_address: str = ""
    revisit_of: float | None = None
    """For a conditional request (a revisit): Unix time of the capture its validators came from (0: unknown);
    None for any other request."""


def header_value(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name`` in ``headers`` (case-insensitive), or None."""
    wanted = name.lower()
    for key, value in headers:
        if key.lower() == wanted:
            return value
    return None


def header_values(headers: Sequence[tuple[str, str]], name: str) -> list[str]:
    """Every value of header ``name`` in ``headers`` (case-insensitive), in order."""
    wanted = name.lower()
    return [value for key, value in headers if key.lower() == wanted]


def media_type(content_type_header: str | None) -> str:
    """The lowercased media type of a Content-Type header (``""`` if absent)."""
    if not content_type_header:
        return ""
    return content_type_header.split(";", 1)[0].strip().lower()


def parse_retry_after(value: str | None, date_header: str | None, now_epoch: float) -> float | None:
    """Seconds to wait from a Retry-After header (RFC 9110 section 10.2.3), or None.

    ``value`` is delta-seconds or an HTTP-date. A date is measured against the
    response's own Date header when there is one (so a skewed server clock
    does not matter), else against ``now_epoch`` (Unix seconds). The result
    is clamped to ``[0, 86400]``; unparseable values give None.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit():
        return min(float(text), _MAX_RETRY_AFTER)
    until = _http_date(text)
    if until is None:
        return None
    reference = _http_date(date_header) if date_header else None
    seconds = until - (reference if reference is not None else now_epoch)
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _http_date(text: str) -> float | None:
    try:
        parsed = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # "-0000" gives a naive result; HTTP dates are UTC
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()
