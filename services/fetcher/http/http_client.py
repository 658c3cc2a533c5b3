"""The fetcher's HTTP client: bounded GETs that never raise for network problems.

:class:`HttpFetcher` owns one :class:`aiohttp.ClientSession`. It follows
redirects itself so that every hop can be checked (robots.txt, the SSRF guard)
before it is requested, reads and decodes bodies itself within a byte cap and
a minimum rate (:mod:`services.fetcher.http.body_reader`), hands every exchange as
sent and received to an optional observer (the WARC writer), and turns every
network or protocol failure into an
:class:`~services.fetcher.http.http_response.HttpResponse` with ``status == 0`` and
an ``error`` code.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from services.fetcher.clock import Clock, SystemClock
from services.fetcher.http.address_guard import (
    ERROR_BLOCKED_ADDRESS,
    AddressPolicy,
    BlockedAddressError,
    GuardedResolver,
    TargetGuard,
)
from services.fetcher.http.body_reader import ACCEPT_ENCODING, ERROR_SLOW_BODY, Body, BodyLimits, BodyReader
from services.fetcher.http.deadlines import FIRED_TIME, Deadline, Deadlines
from services.fetcher.http.host_resolver import StaticHostResolver, validate_host_map
from services.fetcher.http.http_response import (
    ERROR_CONNECT_TIMEOUT,
    ERROR_DISALLOWED_REDIRECT,
    ERROR_INVALID_REDIRECT,
    ERROR_INVALID_URL,
    ERROR_REDIRECT_LOOP,
    ERROR_TIMEOUT,
    ERROR_TOO_MANY_REDIRECTS,
    HttpExchange,
    HttpResponse,
    media_type,
    parse_retry_after,
)
from services.fetcher.http.informational_responses import (
    ERROR_TOO_MANY_INFORMATIONAL,
    BoundedConnector,
    TooManyInformationalResponses,
)
from services.fetcher.http.revisit_validators import Validators, declares_body

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_ACCEPT_TYPES", "AllowFn", "ExchangeObserver", "HttpFetcher", "is_fetchable_url"]

DEFAULT_ACCEPT_TYPES: tuple[str, ...] = (
    "text/html",
    "application/xhtml+xml",
    "text/plain",
    "application/xml",
    "text/xml",
)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ACCEPT_HEADER = "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5"
_MAX_DETAIL = 200

AllowFn = Callable[[str], Awaitable[bool]]
"""Asked before each redirect hop is requested; False stops the fetch."""
ExchangeObserver = Callable[[HttpExchange], Awaitable[None]]
"""Told about every response received (redirect hops and cut bodies included); may wait (backpressure)."""


def is_fetchable_url(url: URL) -> bool:
    """Whether ``url`` is an absolute http(s) URL with a host."""
    return url.scheme in ("http", "https") and bool(url.raw_host)


def _blocked_only(verdict: str | None) -> str | None:
    return verdict if verdict is not None and verdict.startswith(ERROR_BLOCKED_ADDRESS) else None


class HttpFetcher:
    """GETs URLs with bounded time and memory, through an optional proxy and static host map.

    ``proxy`` is an HTTP proxy URL every request goes through (https targets
    are tunnelled with CONNECT). ``host_map`` pins host names to addresses
    (like /etc/hosts); other hosts use the system resolver. ``accept_types``
    lists the media types whose bodies are kept (``type/*`` and ``*/*``
    patterns allowed); for others only status and headers are returned. A
    response without a Content-Type keeps its body. ``connect_timeout``
    bounds each TCP connect; ``total_timeout`` bounds all requests of one
    :meth:`fetch`, redirects and body included (time spent in the ``allow``
    callback is not counted); it and the bodies' minimum rate are kept to
    within a tenth of a second (:mod:`services.fetcher.http.deadlines`).
    ``max_informational_responses`` caps the 1xx responses before a final one
    (:mod:`services.fetcher.http.informational_responses`).
    """

    def __init__(
        self,
        *,
        user_agent: str,
        connect_timeout: float,
        total_timeout: float,
        max_body_bytes: int,
        max_redirects: int,
        max_informational_responses: int = 16,
        proxy: str | None = None,
        host_map: Mapping[str, str] | None = None,
        accept_types: Collection[str] = DEFAULT_ACCEPT_TYPES,
        connection_limit: int = 100,
        connection_limit_per_host: int = 0,
        chunk_size: int = 64 * 1024,
        min_bytes_per_second: float = 0.0,
        rate_grace: float = 5.0,
        address_policy: AddressPolicy | None = None,
        proxy_unresolved: bool = True,
        observer: ExchangeObserver | None = None,
        clock: Clock | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if max_body_bytes < 0 or max_redirects < 0 or chunk_size <= 0:
            raise ValueError("max_body_bytes, max_redirects must be >= 0 and chunk_size > 0")
        self._user_agent = user_agent
        self._connect_timeout = connect_timeout
        self._total_timeout = total_timeout
        self._max_body_bytes = max_body_bytes
        self._max_redirects = max_redirects
        self._max_informational = max_informational_responses
        self._proxy = URL(proxy) if proxy else None
        self._host_map = dict(host_map or {})
        self._accept_exact = frozenset(t.lower() for t in accept_types if not t.endswith("/*"))
        self._accept_prefixes = tuple(t.lower()[:-1] for t in accept_types if t.endswith("/*"))
        self._connection_limit = connection_limit
        self._connection_limit_per_host = connection_limit_per_host
        self._limits = BodyLimits(max_body_bytes, min_bytes_per_second, rate_grace, chunk_size)
        self._address_policy = address_policy
        self._proxy_unresolved = proxy_unresolved
        self._observer = observer
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._wall_clock = wall_clock
        self._session: aiohttp.ClientSession | None = None
        self._resolver: StaticHostResolver | None = None
        self._guard: TargetGuard | None = None
        self._deadlines = Deadlines()
        validate_host_map(self._host_map)

    @property
    def max_body_bytes(self) -> int:
        """The cap on decoded body bytes kept per response."""
        return self._max_body_bytes

    async def start(self) -> None:
        """Open the connection pool."""
        if self._session is not None:
            return
        self._resolver = StaticHostResolver(self._host_map)
        resolver: AbstractResolver = self._resolver
        if self._address_policy is not None:
            exempt = [self._proxy.raw_host] if self._proxy is not None and self._proxy.raw_host else []
            resolver = GuardedResolver(self._resolver, self._address_policy, exempt)
            self._guard = TargetGuard(
                self._address_policy,
                self._resolver,
                proxy=self._proxy is not None,
                proxy_unresolved=self._proxy_unresolved,
            )
        connector = BoundedConnector(
            max_informational=self._max_informational,
            limit=self._connection_limit,
            limit_per_host=self._connection_limit_per_host,
            resolver=resolver,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout),
            cookie_jar=aiohttp.DummyCookieJar(),
            headers={"User-Agent": self._user_agent, "Accept": _ACCEPT_HEADER, "Accept-Encoding": ACCEPT_ENCODING},
            trust_env=False,
            auto_decompress=False,
        )

    async def stop(self) -> None:
        """Close the connection pool; in-flight fetches fail with a connection error."""
        session, self._session = self._session, None
        resolver, self._resolver = self._resolver, None
        self._guard = None
        if session is not None:
            await session.close()
        if resolver is not None:  # the connector does not close a resolver it was given
            await resolver.close()

    async def resolve_address(self, host: str) -> str | None:
        """The first address ``host`` resolves to here (host map or DNS), or None."""
        resolver = self._resolver
        if resolver is None:
            return None
        try:
            results = await resolver.resolve(host, 0, socket.AF_UNSPEC)
        except OSError:
            return None
        return str(results[0]["host"]) if results else None

    async def target_refusal(self, host: str) -> str | None:
        """Why the SSRF guard refuses ``host`` (``blocked_address:...``), or None (also with no guard)."""
        known, refusal = self.known_refusal(host)
        if known or self._guard is None:
            return refusal
        return _blocked_only(await self._guard.check(host))

    def known_refusal(self, host: str) -> tuple[bool, str | None]:
        """:meth:`target_refusal` from the guard's cache: ``(True, refusal)``, or ``(False, None)`` on a miss."""
        if self._guard is None:
            return True, None
        known, verdict = self._guard.known(host)
        return known, _blocked_only(verdict)

    def accepts(self, content_type: str) -> bool:
        """Whether a body of media type ``content_type`` is kept (``""`` counts as accepted)."""
        if not content_type or content_type in self._accept_exact:
            return True
        return any(p == "*/" or content_type.startswith(p) for p in self._accept_prefixes)

    async def fetch(
        self,
        url: str,
        *,
        allow: AllowFn | None = None,
        max_redirects: int | None = None,
        accept_all_types: bool = False,
        validators: Validators | None = None,
    ) -> HttpResponse:
        """GET ``url``, following up to ``max_redirects`` redirects (default: the client's).

        ``allow`` is awaited with every redirect target before it is
        requested; when it returns False the fetch stops with error
        ``disallowed_redirect:<target>``. ``validators`` (a revisit's) make the
        first request conditional (later hops are not: the validators are
        ``url``'s). Never raises for network, protocol or URL problems
        (exceptions from ``allow`` propagate).
        """
        session = self._session
        if session is None:
            raise RuntimeError("HttpFetcher.start() has not been called")
        limit = self._max_redirects if max_redirects is None else max_redirects
        try:
            current = URL(url)
            if current.raw_fragment:
                current = current.with_fragment(None)
        except (ValueError, TypeError):
            return _failure(url, url, ERROR_INVALID_URL, [], 0.0)
        if not is_fetchable_url(current):
            return _failure(url, url, ERROR_INVALID_URL, [], 0.0)
        current_text = str(current)
        chain: list[str] = []  # the URLs that answered with a redirect, in order: also what a loop would revisit
        budget = self._total_timeout
        elapsed = 0.0
        loop = asyncio.get_running_loop()
        conditional = validators if validators is not None and validators.request_headers() else None
        while True:
            started, real_started = self._clock.now(), loop.time()
            hop_or_error = await self._request(session, current, budget, accept_all_types, conditional)
            conditional = None
            elapsed += self._clock.now() - started
            budget -= loop.time() - real_started
            if isinstance(hop_or_error, str):
                return _failure(url, current_text, hop_or_error, chain, elapsed)
            hop = hop_or_error
            if hop.error:
                return _failure(url, current_text, hop.error, chain, elapsed)
            # the Location header is looked for only in redirects (most responses are not)
            if hop.status not in REDIRECT_STATUSES or (location := _header(hop.headers, "location")) is None:
                hop.url, hop.final_url, hop.elapsed, hop.redirect_chain = url, current_text, elapsed, chain
                return hop
            chain.append(current_text)
            try:
                target = current.join(URL(location.strip())).with_fragment(None)
            except (ValueError, TypeError):
                target = None
            if target is None or not is_fetchable_url(target):
                detail = _clip(location)
                return _failure(url, current_text, f"{ERROR_INVALID_REDIRECT}:{detail}", chain, elapsed)
            target_text = str(target)
            if target_text in chain:
                return _failure(url, current_text, ERROR_REDIRECT_LOOP, chain, elapsed)
            if len(chain) > limit:
                return _failure(url, current_text, ERROR_TOO_MANY_REDIRECTS, chain, elapsed)
            refusal = await self._guard.check(target.raw_host or "") if self._guard is not None else None
            if refusal is not None:  # before robots.txt of the target is asked for
                return _failure(url, current_text, refusal, chain, elapsed)
            if allow is not None and not await allow(target_text):
                error = f"{ERROR_DISALLOWED_REDIRECT}:{target_text}"
                return _failure(url, current_text, error, chain, elapsed)
            current, current_text = target, target_text

    async def _request(self, session: aiohttp.ClientSession, url: URL, budget: float,
                       accept_all: bool, conditional: Validators | None = None) -> HttpResponse | str:
        """One GET of ``url`` within ``budget`` seconds (conditional with ``conditional``'s headers): its response as
        :meth:`_read` makes it, or an error code."""
        if budget <= 0:
            return ERROR_TIMEOUT
        if session.closed:
            return "client_error:stopped"
        if self._guard is not None:
            known, refusal = self._guard.known(url.raw_host or "")
            if not known:
                refusal = await self._guard.check(url.raw_host or "")
            if refusal is not None:
                return refusal
        sent_at = self._wall_clock() if self._observer is not None else 0.0  # what the archive records
        deadline = self._deadlines.watch(budget)
        try:
            headers = conditional.request_headers() if conditional is not None else None
            async with session.get(url, allow_redirects=False, proxy=self._proxy, headers=headers) as response:
                return await self._read(response, accept_all, sent_at, deadline, conditional)
        except asyncio.CancelledError:
            if deadline.expired_here(FIRED_TIME):
                return ERROR_TIMEOUT
            raise
        except aiohttp.ConnectionTimeoutError:
            return ERROR_CONNECT_TIMEOUT
        except (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError) as exc:
            return f"proxy_error:{_describe(exc)}"
        except aiohttp.ClientConnectorDNSError as exc:
            if isinstance(exc.os_error, BlockedAddressError):
                return f"{ERROR_BLOCKED_ADDRESS}:{_describe(exc.os_error)}"
            return f"dns_error:{_describe(exc)}"
        except aiohttp.ClientSSLError as exc:
            return f"connect_error:tls:{_describe(exc)}"
        except aiohttp.ClientConnectorError as exc:
            return f"connect_error:{_describe(exc)}"
        except TimeoutError:  # a socket read timeout inside aiohttp
            return ERROR_TIMEOUT
        except aiohttp.InvalidURL:
            return ERROR_INVALID_URL
        except aiohttp.ClientPayloadError as exc:
            return f"payload_error:{_describe(exc)}"
        except aiohttp.ClientResponseError as exc:
            if isinstance(exc.__cause__, TooManyInformationalResponses):
                return ERROR_TOO_MANY_INFORMATIONAL
            return f"protocol_error:{_describe(exc)}"
        except (aiohttp.ClientConnectionError, OSError) as exc:
            return f"connect_error:{_describe(exc)}"
        except (aiohttp.ClientError, ValueError) as exc:
            logger.debug("request to %s failed", url, exc_info=True)
            return f"client_error:{_describe(exc)}"
        finally:
            deadline.close()

    async def _read(self, response: aiohttp.ClientResponse, accept_all: bool, started: float,
                    deadline: Deadline, conditional: Validators | None = None) -> HttpResponse:
        """The response of one hop: what :meth:`fetch` returns once it has filled in the URLs, the time and the
        redirect chain (a body error is in ``error``, the status still set: :meth:`fetch` makes it a failure)."""
        received = response.headers
        headers = list(received.items())
        content_type = media_type(received.get("Content-Type"))
        retry_header = received.get("Retry-After")
        retry_after = (
            None if retry_header is None
            else parse_retry_after(retry_header, received.get("Date"), self._wall_clock())
        )
        cut = "length"
        if accept_all or self.accepts(content_type):
            reader = BodyReader(received.get("Content-Encoding", ""), self._limits)
            try:
                body = await reader.read(response.content, deadline)
            except BaseException as exc:  # cancelled by the total timeout or a handoff: still archived
                cut = "disconnect" if isinstance(exc, Exception) else "unspecified"
                if self._observer is not None:
                    await self._observe(response, started, bytes(reader.raw), cut)
                raise
            cut = "time" if body.error == ERROR_SLOW_BODY else "length" if body.truncated else ""
        else:
            body = Body(b"", b"", False)
        if body.truncated or body.error or not response.content.at_eof() or (
                response.status == 304 and declares_body(headers)):
            response.close()  # drop the connection instead of draining an unread body (a 304's is never read)
        if self._observer is not None:
            await self._observe(response, started, body.raw, cut, conditional)
        return HttpResponse(url="", final_url="", status=response.status, headers=headers, body=body.decoded,
                            truncated=body.truncated, error=body.error, content_type=content_type,
                            retry_after=retry_after)

    async def _observe(self, response: aiohttp.ClientResponse, started: float, raw: bytes, truncated: str,
                       conditional: Validators | None = None) -> None:
        if self._observer is None:
            return
        info = response.request_info
        remote = ""
        if self._proxy is None and response.connection is not None and response.connection.transport is not None:
            peer = response.connection.transport.get_extra_info("peername")
            remote = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        exchange = HttpExchange(
            url=str(response.url),
            method=info.method,
            request_headers=[(str(k), str(v)) for k, v in info.headers.items()],
            started_at=started,
            status=response.status,
            reason=response.reason or "",
            http_version=f"{response.version.major}.{response.version.minor}" if response.version else "1.1",
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers],
            raw_body=raw,
            truncated=truncated,
            remote_address=remote,
            revisit_of=conditional.captured_at if conditional is not None else None,
        )
        try:
            await self._observer(exchange)
        except Exception:
            logger.exception("exchange observer failed for %s", exchange.url)


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return _clip(text)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def _failure(url: str, final_url: str, error: str, chain: list[str], elapsed: float) -> HttpResponse:
    return HttpResponse(
        url=url, final_url=final_url, status=0, error=error, redirect_chain=list(chain), elapsed=elapsed
    )
