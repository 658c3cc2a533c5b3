"""HTTP server for the simulated web: every host on one loopback port.

The fetcher reaches it the way it reaches a real deployment's web, by one of two
ordinary settings:

* an HTTP forward proxy (``proxy=http://127.0.0.1:PORT``): requests arrive in
  absolute form (``GET http://site-001.test/x HTTP/1.1``) and the target host
  and path are taken from that URL;
* a static host-to-address map (every simulated host resolved to 127.0.0.1):
  requests arrive in origin form and the host comes from the ``Host`` header.

Asked for its own address (``Host: 127.0.0.1:PORT``), it serves a directory of
all home pages. Unknown hosts and paths answer 404 (so robots.txt of an unknown
host is "missing", which allows everything). Pages carry ETag (a digest of their
HTML) and Last-Modified; the hosts that honour them (``conditional_hosts_ratio``)
answer a conditional request whose validators match with 304. Every request is recorded in a
:class:`~libs.simweb.request_log.RequestLog`. With ``hostile``, the hosts of
:mod:`libs.simweb.hostile` misbehave; with ``tls``, the server also listens for
HTTPS on ``tls_port``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from aiohttp import hdrs, web
from aiohttp.web_runner import AppRunner

from libs.simweb.clock import SimClock
from libs.simweb.hostile import HostileWeb
from libs.simweb.render import http_time, render_index
from libs.simweb.request_log import RequestLog, RequestRecord
from libs.simweb.web import SimWeb

logger = logging.getLogger(__name__)

_HTML = "text/html"
_TEXT = "text/plain"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _strip_port(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1: host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0].rstrip(".") if host.count(":") == 1 else host.rstrip(".")


def _not_modified(request: web.Request, modified: datetime, etag: str) -> bool:
    """Whether a conditional request's validators match (If-None-Match, compared weakly, wins over
    If-Modified-Since: RFC 9110 section 13.2.2)."""
    match = request.headers.get(hdrs.IF_NONE_MATCH)
    if match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
        return "*" in tags or etag.removeprefix("W/") in tags
    header = request.headers.get(hdrs.IF_MODIFIED_SINCE)
    if not header:
        return False
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return modified.replace(microsecond=0) <= since


class SimWebServer:
    """Serves a :class:`SimWeb` at the time given by a :class:`SimClock`; explicit ``start``/``stop``."""

    def __init__(
        self,
        web: SimWeb,
        clock: SimClock,
        host: str = "127.0.0.1",
        port: int = 0,
        log_file: str | Path | None = None,
        gzip: bool = True,
        hostile: HostileWeb | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``log_file``: also append each record there as a JSON line; ``gzip``: compress responses
        for clients that accept it (turn off to spare the server's CPU in throughput benchmarks)."""
        self.web = web
        self.clock = clock
        self._bind_host = host
        self._bind_port = port
        self._log = RequestLog(log_file)
        self._gzip = gzip
        self._hostile = hostile
        self._tls = tls
        self._runner: AppRunner | None = None
        self._port: int | None = None
        self._tls_port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def tls_port(self) -> int:
        """The HTTPS port (with ``tls`` only)."""
        if self._tls_port is None:
            raise RuntimeError("server not started with tls")
        return self._tls_port

    @property
    def url(self) -> str:
        """``http://HOST:PORT``: the proxy address, and the address every simulated host maps to."""
        return f"http://{self._bind_host}:{self.port}"

    @property
    def request_log(self) -> list[RequestRecord]:
        """A copy of the requests served so far."""
        return self._log.records()

    def clear_log(self) -> None:
        self._log.clear()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self._bind_host, self._bind_port)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        if self._tls is not None:
            await web.TCPSite(runner, self._bind_host, 0, ssl_context=self._tls).start()
            self._tls_port = int(runner.addresses[-1][1])
        self._log.open()
        logger.info("simulated web serving %d hosts at %s", len(self.web.hosts), self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._log.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started, wall = time.monotonic(), time.time()
        finished: float | None = None
        response: web.StreamResponse | None = None
        host = _strip_port(request.host)
        status = 500
        try:
            spec = self.web.hosts.get(host)
            if spec is not None and spec.latency > 0:
                await asyncio.sleep(spec.latency)
            if self._hostile is not None and self._hostile.serves(host):
                answer = await self._hostile.respond(request, host)
                status = answer.status
                if answer.response is None:  # the connection was cut on purpose
                    raise asyncio.CancelledError
                if not answer.response.prepared:
                    await answer.response.prepare(request)
                with contextlib.suppress(ConnectionError):  # a client that gave up on a hostile body
                    await answer.response.write_eof()
                return answer.response
            response = self._respond(request, host)
            status = response.status
            await response.prepare(request)  # headers ready, the body compressed when asked
            # The end is stamped just before the body goes to the socket: nothing waits between the
            # two, while after the write the client it wakes may take the CPU first (on a loaded
            # machine, tens of milliseconds before this process stamps anything).
            finished = time.monotonic()
            await response.write_eof()
            return response
        finally:
            record = RequestRecord(
                started_at=started,
                finished_at=finished if finished is not None else time.monotonic(),
                wall_time=wall,
                host=host,
                path=request.rel_url.raw_path_qs,
                status=status,
                user_agent=request.headers.get(hdrs.USER_AGENT, ""),
                method=request.method,
                bytes_sent=response.body_length if response is not None else 0,
            )
            self._log.append(record)

    def _respond(self, request: web.Request, host: str) -> web.Response:
        if request.method not in (hdrs.METH_GET, hdrs.METH_HEAD):
            return web.Response(status=405, text="method not allowed\n", content_type=_TEXT,
                                headers={hdrs.ALLOW: "GET, HEAD"})
        path = request.rel_url.path
        if host not in self.web.hosts:
            if host in _LOOPBACK_NAMES and path == "/":
                return web.Response(text=render_index(list(self.web.hosts.values())), content_type=_HTML)
            return web.Response(status=404, text=f"unknown host {host}\n", content_type=_TEXT)
        if path == "/robots.txt":
            status, body = self.web.robots_txt(host)
            return web.Response(status=status, text=body or f"{status}\n", content_type=_TEXT)
        now = self.clock.now()
        url = f"http://{host}{path}"
        html = self.web.html(url, now)
        modified = self.web.last_modified(url, now)
        if html is None or modified is None:
            return web.Response(status=404, text="<!doctype html><title>Not found</title><p>Not found.</p>\n",
                                content_type=_HTML)
        etag = self.web.etag(url, now) or ""
        headers = {hdrs.LAST_MODIFIED: http_time(modified), hdrs.ETAG: etag}
        if self.web.honours_validators(host) and _not_modified(request, modified, etag):
            return web.Response(status=304, headers=headers)
        response = web.Response(text=html, content_type=_HTML, charset="utf-8", headers=headers)
        if self._gzip and "gzip" in request.headers.get(hdrs.ACCEPT_ENCODING, "").lower():
            response.enable_compression(web.ContentCoding.gzip)
        return response
