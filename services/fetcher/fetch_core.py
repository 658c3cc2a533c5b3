"""One polite, robots-respecting fetch of one URL, with its outcome classified.

:class:`FetchCore` is what the fetcher's consumer loop calls for each fetch
request. It holds no Kafka knowledge: it checks the URL, consults robots.txt
(whose own fetch waits for the host like any other request), waits for the
host's politeness slot, fetches (checking robots.txt again before every
redirect hop), reports the timing to the politeness clock and returns a
:class:`FetchAttempt`.

Wiring, as a service factory would do it::

    http = HttpFetcher(...)
    politeness = HostPoliteness(clock, ...)
    robots = RobotsCache(polite_robots_fetch(http, politeness), user_agent_token="trawl", clock=clock)
    core = FetchCore(http, robots, politeness, clock)
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal, TypeVar

from yarl import URL

from services.fetcher.clock import Clock
from services.fetcher.http.address_guard import ERROR_BLOCKED_ADDRESS
from services.fetcher.http.http_client import HttpFetcher, is_fetchable_url
from services.fetcher.http.http_response import ERROR_DISALLOWED_REDIRECT, ERROR_INVALID_URL, HttpResponse
from services.fetcher.http.revisit_validators import Validators, count, declares_body, received_validators
from services.fetcher.politeness.politeness import (
    HostParkedError,
    HostPoliteness,
    HostReleasedError,
    HostSlot,
    PolitenessTimeoutError,
)
from services.fetcher.politeness.politeness_keys import PolitenessKeys
from services.fetcher.robots.robots import FetchFn, RobotsCache, origin_of

logger = logging.getLogger(__name__)

__all__ = [
    "ROBOTS_MAX_REDIRECTS",
    "FetchAttempt",
    "FetchCore",
    "Outcome",
    "direct_robots_fetch",
    "polite_robots_fetch",
    "record_response",
]

ROBOTS_MAX_REDIRECTS = 5
"""Redirects followed for robots.txt (RFC 9309 section 2.3.1.2)."""

Outcome = Literal[
    "ok",
    "not_modified",
    "http_error",
    "network_error",
    "robots_disallowed",
    "too_large",
    "invalid_url",
    "unsupported_type",
    "redirect_disallowed",
    "host_parked",
    "politeness_timeout",
    "handed_over",
]

T = TypeVar("T")

_RETRYABLE_STATUSES = frozenset({408, 429})
_ORIGINS_KEPT = 100_000  # origins remembered by scheme and authority (then forgotten all at once)


@dataclass(slots=True)  # not frozen: made for every fetch, and a frozen one costs twice as much to make
class FetchAttempt:
    """The outcome of one :meth:`FetchCore.fetch`.

    ``response`` is None when no request for the URL was sent (invalid URL,
    robots.txt disallows it, host parked or busy past ``max_wait``) or when
    the request was cut short because the host moved to another fetcher
    (``handed_over``: the request is handed on, not answered). For
    ``unsupported_type`` the body is dropped. ``retryable`` says whether the
    same URL may succeed later (network errors, 5xx, 408, 429, robots.txt
    unreachable, host parked or busy); ``host_next_allowed_at`` is the clock
    time at which the host may be contacted again. ``detail`` is a short
    human-readable reason (error code, status, refusal reason).
    """

    url: str
    outcome: Outcome
    response: HttpResponse | None
    retryable: bool
    host_next_allowed_at: float
    detail: str = ""
    validators: Validators | None = None


def record_response(slot: HostSlot, response: HttpResponse) -> None:
    """Report ``response`` to the politeness slot it was fetched in."""
    slot.record(response.elapsed, response.status, response.retry_after, response.is_network_error)


def polite_robots_fetch(
    http: HttpFetcher, politeness: HostPoliteness, keys: PolitenessKeys | None = None,
    wire: asyncio.Semaphore | None = None,
) -> FetchFn:
    """The robots.txt fetch for :class:`RobotsCache`: waits for the host's slot like any request,
    then for a place on the wire (``wire``, shared with :class:`FetchCore`).

    Raises the politeness errors (:class:`HostParkedError`,
    :class:`PolitenessTimeoutError`, :class:`HostReleasedError`) so that
    nothing is cached for them.
    """
    keys = keys if keys is not None else PolitenessKeys()

    async def fetch(url: str) -> HttpResponse:
        host = await keys.key(URL(url).raw_host or "")
        async with politeness.slot(host) as slot:
            response = await slot.guard(
                _on_wire(wire, http.fetch(url, max_redirects=ROBOTS_MAX_REDIRECTS, accept_all_types=True))
            )
            record_response(slot, response)
        return response

    return fetch


async def _on_wire(wire: asyncio.Semaphore | None, request: Awaitable[T]) -> T:
    """``request``, sent once a place on the wire is free (at once without ``wire``)."""
    if wire is None:
        return await request
    async with wire:
        return await request


def direct_robots_fetch(http: HttpFetcher) -> FetchFn:
    """A robots.txt fetch that does not wait for politeness (used while already holding a slot)."""

    async def fetch(url: str) -> HttpResponse:
        return await http.fetch(url, max_redirects=ROBOTS_MAX_REDIRECTS, accept_all_types=True)

    return fetch


class FetchCore:
    """Fetches URLs politely and classifies the results; see the module docstring.

    Redirect hops are requested inside the slot of the original URL's host:
    they are checked against robots.txt but not spaced by the target host's
    politeness. A hop's robots.txt, if not cached, is fetched at once rather
    than through the target host's slot, since waiting there while holding a
    slot could deadlock with a fetch redirecting the other way.

    ``wire`` bounds the requests being sent at once. A request takes its place
    on the wire only once its host's gap has passed, so requests waiting for a
    gap (any number of them, for any number of hosts) hold no place: a host
    whose turn has come never waits behind another host's gap.
    """

    def __init__(
        self,
        http: HttpFetcher,
        robots: RobotsCache,
        politeness: HostPoliteness,
        clock: Clock,
        keys: PolitenessKeys | None = None,
        wire: asyncio.Semaphore | None = None,
    ) -> None:
        self._http = http
        self._wire = wire
        self._robots = robots
        self._politeness = politeness
        self._clock = clock
        self._keys = keys if keys is not None else PolitenessKeys()
        self._direct_robots = direct_robots_fetch(http)
        self.outcomes: collections.Counter[str] = collections.Counter()
        self._origins: dict[tuple[str, str], str] = {}

    async def fetch(self, url: str, min_delay: float = 0.0, validators: Validators | None = None) -> FetchAttempt:
        """Fetch ``url`` if robots.txt and politeness allow; never raises for network problems.

        ``min_delay`` (the host's operator policy) is kept like a robots.txt Crawl-delay;
        ``validators`` (a revisit's, see :mod:`services.fetcher.http.revisit_validators`) make the
        request conditional. Every outcome is made by :meth:`_result`, which counts it.
        """
        try:
            parsed = URL(url)
        except (ValueError, TypeError):
            parsed = None
        if parsed is None or not is_fetchable_url(parsed):
            return self._result(url, None, "invalid_url", None, False, ERROR_INVALID_URL)
        host = (parsed.raw_host or "").lower()
        known, refusal = self._http.known_refusal(host)
        if not known:
            refusal = await self._http.target_refusal(host)
        if refusal is not None:  # before robots.txt, whose fetch the guard would refuse as "unreachable"
            return self._result(url, host, "invalid_url", None, False, refusal)
        origin = self._origin(parsed)
        try:
            policy = self._robots.known(origin) or await self._robots.policy(origin)
            if not policy.allowed(url):
                if policy.transient:  # robots.txt timed out: nothing known yet, try the page again later
                    detail = f"robots.txt not fetched: {policy.error}"
                    return self._result(url, host, "network_error", None, True, detail)
                detail = (
                    f"robots.txt {policy.kind} (status {policy.status}{', ' + policy.error if policy.error else ''})"
                )
                return self._result(url, host, "robots_disallowed", None, policy.temporary, detail)
            crawl_delay = policy.crawl_delay
            if min_delay > 0:
                crawl_delay = max(crawl_delay or 0.0, min_delay)
            key = await self._keys.key(host) if self._keys.by_ip else host  # the host, lower case
            # politeness.slot(...) and slot.guard(...) spelt out: no coroutine on the hottest path when the
            # host is free, and one frame less on every resumption of the request.
            politeness = self._politeness
            slot = politeness.try_enter(key, crawl_delay) or await politeness.enter(key, crawl_delay)
            try:
                slot.begin()
                try:
                    wire = self._wire
                    if wire is None:
                        response = await self._http.fetch(url, allow=self._hop_allowed, validators=validators)
                    else:
                        async with wire:
                            response = await self._http.fetch(url, allow=self._hop_allowed, validators=validators)
                except asyncio.CancelledError:
                    slot.cancelled()
                    raise
                finally:
                    slot.end()
                record_response(slot, response)
            finally:
                politeness.leave(slot)
        except HostReleasedError as exc:
            return self._result(url, host, "handed_over", None, True, exc.reason)
        except HostParkedError as exc:
            return self._result(url, host, "host_parked", None, True, exc.reason)
        except PolitenessTimeoutError as exc:
            return self._result(url, host, "politeness_timeout", None, True, exc.reason)
        return self._classify(url, host, response, validators)

    def _origin(self, parsed: URL) -> str:
        """What origin_of gives for ``parsed``, worked out once per scheme and authority."""
        key = (parsed.scheme, parsed.raw_authority)
        origin = self._origins.get(key)
        if origin is None:
            if len(self._origins) >= _ORIGINS_KEPT:
                self._origins.clear()
            origin = self._origins[key] = str(parsed.origin())
        return origin

    async def _hop_allowed(self, hop_url: str) -> bool:
        try:
            origin = origin_of(hop_url)
        except ValueError:
            return False
        policy = await self._robots.policy(origin, direct_fetch=self._direct_robots)
        return policy.allowed(hop_url)

    def _classify(self, url: str, host: str, response: HttpResponse,
                  validators: Validators | None = None) -> FetchAttempt:
        if response.error:
            code = response.error_code
            if code == ERROR_DISALLOWED_REDIRECT:
                return self._result(url, host, "redirect_disallowed", response, False, response.error)
            if code in (ERROR_INVALID_URL, ERROR_BLOCKED_ADDRESS):  # the SSRF guard: never fetchable
                return self._result(url, host, "invalid_url", response, False, response.error)
            if response.is_network_error:
                return self._result(url, host, "network_error", response, True, response.error)
            return self._result(url, host, "http_error", response, False, response.error)
        status = response.status
        if status == 304:
            return self._not_modified(url, host, response, validators)
        if not 200 <= status < 300:
            retryable = status >= 500 or status in _RETRYABLE_STATUSES
            return self._result(url, host, "http_error", response, retryable, f"status {status}")
        if not self._http.accepts(response.content_type):
            dropped = dataclasses.replace(response, body=b"", truncated=False)
            return self._result(url, host, "unsupported_type", dropped, False, response.content_type)
        kept = received_validators(response.headers) if not response.redirect_chain else Validators()
        if validators and not response.redirect_chain:
            count("ignored" if validators.same_as(kept) else "changed")
        if response.truncated:
            detail = f"body over {self._http.max_body_bytes} bytes"
            return self._result(url, host, "too_large", response, False, detail, kept)
        return self._result(url, host, "ok", response, False, f"status {status}", kept)

    def _not_modified(self, url: str, host: str, response: HttpResponse, sent: Validators | None) -> FetchAttempt:
        """A 304: the page as captured when the request was conditional, else an HTTP error tried again later."""
        if sent is None or not sent.request_headers() or response.redirect_chain:  # sent with the first request only
            count("unsolicited_304")
            return self._result(url, host, "http_error", response, True, "status 304 to an unconditional request")
        count("not_modified")
        if declares_body(response.headers):
            count("304_with_body")
        fresh = received_validators(response.headers)  # a 304 may update them (RFC 9110 section 15.4.5)
        kept = Validators(fresh.etag or sent.etag, fresh.last_modified or sent.last_modified)
        return self._result(url, host, "not_modified", response, False, "status 304", kept)

    def _result(
        self, url: str, host: str | None, outcome: Outcome, response: HttpResponse | None, retryable: bool,
        detail: str, validators: Validators | None = None,
    ) -> FetchAttempt:
        """The attempt's outcome, counted in :attr:`outcomes`; ``host`` None: no host to ask (an invalid URL)."""
        self.outcomes[outcome] += 1
        logger.debug("fetch %s: %s %s", url, outcome, detail)
        if host is None:
            return FetchAttempt(url, outcome, response, retryable, self._clock.now(), detail)
        next_allowed = self._politeness.next_allowed_at(self._keys.known_key(host))
        return FetchAttempt(url, outcome, response, retryable, next_allowed, detail, validators)

    # Moving hosts between fetchers (see handoff.py) ------------------------------------------

    async def release_hosts(self, hosts: list[str], grace: float) -> None:
        """Stop serving ``hosts``: waiting requests end ``handed_over`` at once, requests on the
        wire get ``grace`` seconds and are then cut short; returns when none is in flight."""
        await self._politeness.release({self._keys.known_key(h) for h in hosts}, grace)

    async def politeness_key(self, host: str) -> str:
        """The key ``host``'s politeness is kept under (the host, or its address)."""
        return await self._keys.key(host)

    def take_key(self, key: str, not_before: float | None = None, last_fetch_end: float | None = None) -> None:
        """Serve the hosts of politeness ``key`` (again); none of their requests starts before ``not_before``."""
        self._politeness.claim(key)
        if not_before is not None:
            self._politeness.hold_until(key, not_before, last_fetch_end=last_fetch_end)

    def next_allowed_at(self, host: str) -> float:
        """Clock time at which a request to ``host`` may start."""
        return self._politeness.next_allowed_at(self._keys.known_key(host))
