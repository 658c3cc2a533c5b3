"""robots.txt per origin (RFC 9309), fetched once per host at a time and cached.

Outcomes of fetching ``<origin>/robots.txt`` (after up to five redirects):

* 2xx: the file is parsed by :mod:`services.fetcher.robots.robots_rules` for our
  user-agent token (the first ``max_bytes`` are used, cut at the last complete
  line, as RFC 9309 section 2.5 allows; a file over 32 KiB is parsed in a
  worker thread, so that it does not hold up the fetches meanwhile);
* 4xx except 429, too many redirects, a redirect loop or a bad redirect
  target: the file is "unavailable", everything is allowed;
* 5xx, 429 or no answer at all: the file is "unreachable", everything is
  disallowed, and that verdict lasts only ``error_ttl`` seconds;
* a timeout (connecting, or the whole request) is the same verdict, but
  *transient*: it lasts only ``timeout_ttl`` seconds, and the fetcher reports
  the page as a retryable network error rather than as disallowed, so that one
  slow moment (the host's, or the network's) does not keep a site out of the
  crawl. Nothing is fetched from the origin meanwhile either way.

A file asking us for a Crawl-delay longer than ``max_crawl_delay`` (300 s by
default, as crawler-commons) is read as "do not crawl" (shorter delays go to
the politeness, which caps them at its own maximum). Parsed and allow-all
verdicts last ``ttl`` seconds. The cache is keyed by origin
(``scheme://host[:port]``) and bounded, least recently used first out.
Concurrent callers asking about the same origin share one fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from yarl import URL

from services.fetcher.clock import Clock
from services.fetcher.http.http_response import (
    ERROR_CONNECT_TIMEOUT,
    ERROR_INVALID_REDIRECT,
    ERROR_REDIRECT_LOOP,
    ERROR_TIMEOUT,
    ERROR_TOO_MANY_REDIRECTS,
    HttpResponse,
)
from services.fetcher.robots.robots_rules import RobotsRules

logger = logging.getLogger(__name__)

__all__ = ["FetchFn", "RobotsCache", "RobotsPolicy", "RobotsStats", "origin_of"]

FetchFn = Callable[[str], Awaitable[HttpResponse]]
"""Fetches one URL (following redirects) and never raises for network problems."""

PolicyKind = Literal["rules", "allow_all", "disallow_all"]

# Redirect failures mean "unavailable" (RFC 9309 section 2.3.1.2), not "unreachable".
_UNAVAILABLE_ERRORS = frozenset({ERROR_TOO_MANY_REDIRECTS, ERROR_REDIRECT_LOOP, ERROR_INVALID_REDIRECT})
_TRANSIENT_ERRORS = frozenset({ERROR_CONNECT_TIMEOUT, ERROR_TIMEOUT})
_PARSE_IN_THREAD_BYTES = 32 * 1024
"""Files larger than this are parsed in a worker thread (tens of milliseconds and more)."""


def origin_of(url_or_origin: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL (default ports dropped); ValueError otherwise."""
    try:
        url = URL(url_or_origin)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a URL: {url_or_origin!r}") from exc
    if url.scheme not in ("http", "https") or not url.raw_host:
        raise ValueError(f"not an absolute http(s) URL: {url_or_origin!r}")
    return str(url.origin())


@dataclass(frozen=True)
class RobotsPolicy:
    """What one origin's robots.txt says about our user agent, and until when it holds."""

    origin: str
    kind: PolicyKind
    fetched_at: float
    expires_at: float
    user_agent_token: str
    status: int = 0
    error: str = ""
    truncated: bool = False
    rules: RobotsRules | None = field(default=None, repr=False, compare=False)
    transient: bool = False
    """A disallow-all because fetching the file timed out (see the module docstring)."""

    @property
    def temporary(self) -> bool:
        """True for a disallow-all caused by an error: retrying later may succeed."""
        return self.kind == "disallow_all"

    def allowed(self, url: str) -> bool:
        """Whether ``url`` (on this origin) may be fetched."""
        if self.rules is not None:
            return self.rules.allowed(url)
        return self.kind == "allow_all"

    @property
    def crawl_delay(self) -> float | None:
        """Seconds between requests asked for by Crawl-delay or Request-rate (the larger), if any."""
        return None if self.rules is None else self.rules.crawl_delay

    @property
    def sitemaps(self) -> list[str]:
        """Sitemap URLs listed in the file."""
        return [] if self.rules is None else list(self.rules.sitemaps)


@dataclass
class RobotsStats:
    """Counters of the cache's work, for metrics."""

    lookups: int = 0
    cache_hits: int = 0
    coalesced: int = 0
    fetches: int = 0
    parsed: int = 0
    allow_all: int = 0
    disallow_all: int = 0
    truncated: int = 0
    fetch_exceptions: int = 0
    evictions: int = 0


class RobotsCache:
    """robots.txt verdicts per origin: fetched through ``fetch``, cached, shared between callers.

    ``fetch`` should follow up to five redirects, keep bodies of any content
    type, and respect the host's politeness. Exceptions it raises (for
    example a politeness refusal) reach every caller waiting on that fetch
    and nothing is cached. ``on_loaded`` is told about every policy fetched
    (the sitemap reader uses it).
    """

    def __init__(
        self,
        fetch: FetchFn,
        *,
        user_agent_token: str,
        clock: Clock,
        ttl: float = 86_400.0,
        error_ttl: float = 600.0,
        timeout_ttl: float = 5.0,
        max_bytes: int = 500 * 1024,
        max_entries: int = 100_000,
        max_crawl_delay: float = 300.0,
        on_loaded: Callable[[RobotsPolicy], None] | None = None,
    ) -> None:
        if max_entries <= 0 or max_bytes <= 0:
            raise ValueError("max_entries and max_bytes must be positive")
        self._fetch = fetch
        self._token = user_agent_token
        self._clock = clock
        self._ttl = ttl
        self._error_ttl = error_ttl
        self._timeout_ttl = min(timeout_ttl, error_ttl)
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._max_crawl_delay = max_crawl_delay
        self._on_loaded = on_loaded
        self._cache: OrderedDict[str, RobotsPolicy] = OrderedDict()
        self._pending: dict[str, asyncio.Task[RobotsPolicy]] = {}
        self.stats = RobotsStats()

    def __len__(self) -> int:
        return len(self._cache)

    def cached_policy(self, origin: str) -> RobotsPolicy | None:
        """The unexpired cached policy of ``origin``, or None (expired entries are dropped)."""
        policy = self._cache.get(origin)
        if policy is None:
            return None
        if self._clock.now() >= policy.expires_at:
            del self._cache[origin]
            return None
        self._cache.move_to_end(origin)
        return policy

    def _fresh(self, origin: str) -> RobotsPolicy | None:
        cached = self._cache.get(origin)
        if cached is None or self._clock.now() >= cached.expires_at:
            return None
        self._cache.move_to_end(origin)
        return cached

    def known(self, origin: str) -> RobotsPolicy | None:
        """The cached, unexpired policy of ``origin`` in normal form (counted as a lookup), else None.

        The common case of :meth:`policy` without a coroutine: the fetch path tries this first
        and awaits :meth:`policy` only when it answers None.
        """
        cached = self._fresh(origin)
        if cached is not None:
            self.stats.lookups += 1
            self.stats.cache_hits += 1
        return cached

    async def policy(self, origin: str, *, direct_fetch: FetchFn | None = None) -> RobotsPolicy:
        """The policy of ``origin`` (``scheme://host[:port]``), fetching robots.txt if needed.

        With ``direct_fetch``, a missing policy is loaded with it right away
        instead of joining a fetch already under way; a caller that holds a
        politeness slot uses this, since the shared fetch may be waiting for
        that very slot.
        """
        self.stats.lookups += 1
        cached = self._fresh(origin)  # the common case: asked in normal form, and cached
        if cached is None:
            origin = origin_of(origin)
            cached = self.cached_policy(origin)
        if cached is not None:
            self.stats.cache_hits += 1
            return cached
        if direct_fetch is not None:
            return await self._load(origin, direct_fetch)
        task = self._pending.get(origin)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load(origin, self._fetch))
            self._pending[origin] = task
            task.add_done_callback(self._make_done_callback(origin))
        else:
            self.stats.coalesced += 1
        return await asyncio.shield(task)

    async def allowed(self, url: str) -> bool:
        """Whether ``url`` may be fetched; False for URLs that are not absolute http(s)."""
        try:
            origin = origin_of(url)
        except ValueError:
            return False
        return (await self.policy(origin)).allowed(url)

    async def crawl_delay(self, url_or_origin: str) -> float | None:
        """The crawl delay robots.txt asks of us for the origin of ``url_or_origin``, if any."""
        return (await self.policy(origin_of(url_or_origin))).crawl_delay

    async def sitemaps(self, origin: str) -> list[str]:
        """Sitemap URLs listed in the robots.txt of ``origin``."""
        return (await self.policy(origin)).sitemaps

    def invalidate(self, origin: str) -> None:
        """Forget the cached policy of ``origin``."""
        self._cache.pop(origin_of(origin), None)

    async def stop(self) -> None:
        """Cancel robots.txt fetches under way."""
        tasks = list(self._pending.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    def _make_done_callback(self, origin: str) -> Callable[[asyncio.Task[RobotsPolicy]], None]:
        def done(task: asyncio.Task[RobotsPolicy]) -> None:
            if self._pending.get(origin) is task:
                del self._pending[origin]
            if not task.cancelled():
                task.exception()  # retrieved here so an unawaited failure is not reported as lost

        return done

    async def _load(self, origin: str, fetch: FetchFn) -> RobotsPolicy:
        self.stats.fetches += 1
        try:
            response = await fetch(f"{origin}/robots.txt")
        except Exception:
            self.stats.fetch_exceptions += 1
            raise
        parsed: tuple[RobotsRules, bool] | None = None
        if 200 <= response.status < 300:
            body, truncated = self._cut(response.body, response.truncated)
            if len(body) > _PARSE_IN_THREAD_BYTES:  # a big file would hold up every fetch while it is parsed
                parsed = await asyncio.to_thread(self._parse, body, truncated)
            else:
                parsed = self._parse(body, truncated)
        policy = self._policy_from(origin, response, parsed)
        self._store(policy)
        if self._on_loaded is not None:
            try:
                self._on_loaded(policy)
            except Exception:
                logger.exception("robots.txt observer failed for %s", origin)
        logger.debug(
            "robots.txt for %s: %s (status %s%s)",
            origin,
            policy.kind,
            response.status,
            f", {response.error}" if response.error else "",
        )
        return policy

    def _parse(self, body: bytes, truncated: bool) -> tuple[RobotsRules, bool]:
        return RobotsRules.parse(body, self._token, max_crawl_delay=self._max_crawl_delay), truncated

    def _policy_from(
        self, origin: str, response: HttpResponse, parsed: tuple[RobotsRules, bool] | None
    ) -> RobotsPolicy:
        now = self._clock.now()
        status = response.status
        if parsed is not None:
            rules, truncated = parsed
            self.stats.parsed += 1
            self.stats.truncated += truncated
            return RobotsPolicy(origin, "rules", now, now + self._ttl, self._token, status, "", truncated, rules)
        unavailable = (400 <= status < 500 and status != 429) or (
            status == 0 and response.error_code in _UNAVAILABLE_ERRORS
        )
        if unavailable or 300 <= status < 400:
            self.stats.allow_all += 1
            return RobotsPolicy(origin, "allow_all", now, now + self._ttl, self._token, status, response.error)
        self.stats.disallow_all += 1
        if status == 0 and response.error_code in _TRANSIENT_ERRORS:
            return RobotsPolicy(origin, "disallow_all", now, now + self._timeout_ttl, self._token, status,
                                response.error, transient=True)
        return RobotsPolicy(origin, "disallow_all", now, now + self._error_ttl, self._token, status, response.error)

    def _cut(self, body: bytes, truncated: bool) -> tuple[bytes, bool]:
        if len(body) > self._max_bytes:
            body, truncated = body[: self._max_bytes], True
        if truncated:
            # A cut line could turn "Disallow: /private" into a different rule: drop it.
            last_newline = max(body.rfind(b"\n"), body.rfind(b"\r"))
            if last_newline >= 0:
                body = body[: last_newline + 1]
        return body, truncated

    def _store(self, policy: RobotsPolicy) -> None:
        self._cache[policy.origin] = policy
        self._cache.move_to_end(policy.origin)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
            self.stats.evictions += 1
