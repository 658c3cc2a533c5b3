"""Local HTTP servers on 127.0.0.1 for the fetcher's tests, each with its own request log."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from services.fetcher.http.http_client import HttpFetcher


@dataclass(frozen=True)
class SeenRequest:
    """One request as the server saw it."""

    method: str
    raw_path: str
    host: str
    headers: dict[str, str]
    at: float  # time.monotonic() on arrival


@dataclass
class LocalServer:
    """A running test server; ``requests`` lists every request it received, in order."""

    runner: web.AppRunner
    port: int
    requests: list[SeenRequest] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.origin}{path}"

    def paths(self) -> list[str]:
        return [r.raw_path for r in self.requests]


ServeFn = Callable[[web.Application], Awaitable[LocalServer]]


@pytest.fixture
async def serve() -> AsyncIterator[ServeFn]:
    """Start an aiohttp app on 127.0.0.1 (free port); stopped at the end of the test."""
    servers: list[LocalServer] = []

    async def start(app: web.Application) -> LocalServer:
        log: list[SeenRequest] = []

        @web.middleware
        async def record(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            log.append(
                SeenRequest(request.method, request.raw_path, request.host, dict(request.headers), time.monotonic())
            )
            return await handler(request)

        app.middlewares.insert(0, record)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.2, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = int(runner.addresses[0][1])
        server = LocalServer(runner, port, log)
        servers.append(server)
        return server

    yield start
    for server in reversed(servers):
        await server.runner.cleanup()


def build_text_app(routes: dict[str, tuple[int, str, str]]) -> web.Application:
    """An app answering each path with (status, content type, body); other paths get 404."""
    app = web.Application()
    for path, (status, content_type, body) in routes.items():

        async def handler(
            request: web.Request, status: int = status, content_type: str = content_type, body: str = body
        ) -> web.Response:
            return web.Response(status=status, body=body.encode(), content_type=content_type)

        app.router.add_get(path, handler)
    return app


@pytest.fixture
def text_app() -> Callable[[dict[str, tuple[int, str, str]]], web.Application]:
    """Builds apps with fixed text answers, see :func:`build_text_app`."""
    return build_text_app


FetcherFactory = Callable[..., Awaitable[HttpFetcher]]


@pytest.fixture
async def make_fetcher() -> AsyncIterator[FetcherFactory]:
    """Build and start an HttpFetcher with short test defaults; stopped at the end of the test."""
    fetchers: list[HttpFetcher] = []

    async def build(**overrides: Any) -> HttpFetcher:
        settings: dict[str, Any] = {
            "user_agent": "trawl-test/1.0 (+http://127.0.0.1/bot)",
            "connect_timeout": 0.5,
            "total_timeout": 3.0,
            "max_body_bytes": 64 * 1024,
            "max_redirects": 5,
        }
        settings.update(overrides)
        fetcher = HttpFetcher(**settings)
        await fetcher.start()
        fetchers.append(fetcher)
        return fetcher

    yield build
    for fetcher in fetchers:
        await fetcher.stop()


@pytest.fixture
async def forward_proxy(serve: ServeFn) -> AsyncIterator[tuple[LocalServer, dict[str, int]]]:
    """A forward proxy that logs absolute-form requests and relays them to 127.0.0.1 by port."""
    routes: dict[str, int] = {}  # host name -> local port
    session = aiohttp.ClientSession()

    async def relay(request: web.Request) -> web.Response:
        target = request.url
        port = routes.get(target.host or "")
        if port is None:
            return web.Response(status=502, text="unknown host")
        local = target.with_host("127.0.0.1").with_port(port)
        async with session.get(
            local, headers={"Host": request.headers.get("Host", "")}, allow_redirects=False
        ) as upstream:
            body = await upstream.read()
            return web.Response(status=upstream.status, body=body, content_type=upstream.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", relay)
    proxy = await serve(app)
    yield proxy, routes
    await session.close()
