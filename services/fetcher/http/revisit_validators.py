"""Conditional revisits: the validators a capture gives, the headers a revisit sends, and what its answer means.

A page's last capture leaves its validators (``ETag``, ``Last-Modified``) in the scheduler's
frontier; a revisit's fetch request carries them back (:class:`Validators`), and the first hop
of the fetch is sent with ``If-None-Match`` and ``If-Modified-Since`` (RFC 9110 section 13.1).
A ``304 Not Modified`` then says the page is as captured: no body, no extraction.

Servers get validators wrong in a few known ways, each handled here and counted in
``trawl_fetcher_revisit_validators_total`` by reason:

- ``not_modified``: a conditional request answered 304 (the normal case);
- ``changed``: it answered 200 with other validators: the page changed;
- ``ignored``: it answered 200 with the validators sent: the server ignores conditional
  headers (the page is fetched in full, as without them);
- ``weak_etag``: a weak ETag (``W/"..."``) was received: kept and sent, since If-None-Match
  compares weakly;
- ``broken_etag``: an ETag too long or with characters a header cannot carry: not kept;
- ``broken_last_modified``: a Last-Modified that is not an HTTP date: not kept, never sent;
- ``unsolicited_304``: a 304 to a request that sent no validators: an HTTP error, retried;
- ``304_with_body``: a 304 that declares a body (Content-Length above 0, or a transfer coding):
  still not modified (the validators matched), but the connection is dropped so that the body
  cannot be read as the next response.
"""

from __future__ import annotations

import email.utils
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Counter

from services.fetcher.http.http_response import header_value

__all__ = [
    "REASONS",
    "VALIDATOR_EVENTS",
    "Validators",
    "count",
    "declares_body",
    "received_validators",
]

VALIDATOR_EVENTS = Counter(
    "trawl_fetcher_revisit_validators_total",
    "Conditional revisits by what the server did with the validators"
    " (see services/fetcher/http/revisit_validators.py).",
    ["reason"],
)
REASONS = ("not_modified", "changed", "ignored", "weak_etag", "broken_etag", "broken_last_modified",
           "unsolicited_304", "304_with_body")
_EVENTS = {reason: VALIDATOR_EVENTS.labels(reason) for reason in REASONS}  # every reason exported at zero

_MAX_ETAG = 512


def count(reason: str) -> None:
    _EVENTS[reason].inc()


@dataclass(frozen=True, slots=True)
class Validators:
    """A capture's validators, as received: ``etag`` (quotes and ``W/`` kept) and ``last_modified`` (an HTTP
    date); ``""`` when absent. ``captured_at`` is the capture's Unix time (0: unknown)."""

    etag: str = ""
    last_modified: str = ""
    captured_at: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.etag or self.last_modified)

    def request_headers(self) -> dict[str, str]:
        """The conditional headers of a revisit (none without validators)."""
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified and _http_date_ok(self.last_modified):
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def same_as(self, other: Validators) -> bool:
        """Whether ``other`` (a 200's validators) names the capture these name: the server ignored them."""
        if self.etag and other.etag:
            return _opaque(self.etag) == _opaque(other.etag)
        return bool(self.last_modified) and self.last_modified == other.last_modified


def received_validators(headers: Sequence[tuple[str, str]], *, counted: bool = True) -> Validators:
    """The validators of a response's ``headers`` worth keeping (broken ones dropped, and counted)."""
    etag_value = last_modified_value = None  # the first of each, as header_value finds them: one pass for both
    for key, value in headers:
        name = key.lower()
        if name == "etag":
            if etag_value is None:
                etag_value = value
        elif name == "last-modified" and last_modified_value is None:
            last_modified_value = value
    etag = (etag_value or "").strip()
    if etag and (len(etag) > _MAX_ETAG or not etag.isprintable() or not etag.isascii()):
        etag = ""
        if counted:
            count("broken_etag")
    elif etag.startswith("W/") and counted:
        count("weak_etag")
    last_modified = (last_modified_value or "").strip()
    if last_modified and not _http_date_ok(last_modified):
        last_modified = ""
        if counted:
            count("broken_last_modified")
    return Validators(etag, last_modified)


def declares_body(headers: Sequence[tuple[str, str]]) -> bool:
    """Whether a response's headers announce a body (what a 304 must not have)."""
    if header_value(headers, "Transfer-Encoding"):
        return True
    length = (header_value(headers, "Content-Length") or "").strip()
    return length.isdigit() and int(length) > 0


def _opaque(etag: str) -> str:
    """The opaque tag of an ETag, for the weak comparison (RFC 9110 section 8.8.3.2)."""
    return etag[2:] if etag.startswith("W/") else etag


_VALID_FIXDATE = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), "
    r"(?:(?:0[1-9]|1[0-9]|2[0-8]) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"|(?:29|30) (?:Jan|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)|31 (?:Jan|Mar|May|Jul|Aug|Oct|Dec)) "
    r"(?:0[1-9][0-9]{2}|[1-9][0-9]{3}) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9] GMT"
)
"""An IMF-fixdate (RFC 9110 section 5.6.7), the date nearly every server sends, of a day every such year has
(29 February left out), a time of day and a year from 100 (email.utils reads smaller ones as two-digit years)."""


def _http_date_ok(text: str) -> bool:
    """Whether ``text`` reads as an HTTP date (as email.utils reads it): a valid IMF-fixdate is one without
    asking email.utils (the same answer, about ten times faster: the Last-Modified of every page fetched is
    checked)."""
    return _VALID_FIXDATE.fullmatch(text) is not None or _parses_as_date(text)


@functools.lru_cache(maxsize=16_384)
def _parses_as_date(text: str) -> bool:
    """Whether email.utils reads ``text`` as a date; cached: a revisit's date is read when sent, and again in its
    304."""
    try:
        return email.utils.parsedate_to_datetime(text) is not None
    except (TypeError, ValueError, IndexError):
        return False
