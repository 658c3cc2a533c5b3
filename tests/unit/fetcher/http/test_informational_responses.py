"""Informational (1xx) responses before the final one are capped: an endless stream of them ends the fetch at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb.hostile import HostileWeb, hostile_host
from services.fetcher.http.http_client import HttpFetcher
from services.fetcher.http.informational_responses import (
    ERROR_TOO_MANY_INFORMATIONAL,
    INFORMATIONAL_FLOODS,
    BoundedConnector,
)
from tests.unit.fetcher.loop_watch import rss_bytes

MiB = 1024 * 1024
HINT = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
PAGE = b"<p>the page</p>"
FINAL = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE)

Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]
RawServer = Callable[[Answer], Awaitable[str]]


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    """A loopback server answering every request on a connection (kept alive) with ``answer``; gives its URL."""
    servers: list[asyncio.Server] = []

    async def start(answer: Answer) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    await reader.readuntil(b"\r\n\r\n")
                    await answer(writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"

    yield start
    for server in servers:
        server.close()


async def endless_hints(writer: asyncio.StreamWriter) -> None:
    while True:
        writer.write(HINT * 200)
        await writer.drain()


def hints_then_page(count: int) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(HINT * count + FINAL)
        await writer.drain()

    return answer


def client(max_informational_responses: int) -> HttpFetcher:
    return HttpFetcher(user_agent="t", connect_timeout=2, total_timeout=10, max_body_bytes=MiB, max_redirects=5,
                       max_informational_responses=max_informational_responses)


async def test_an_endless_stream_of_early_hints_ends_the_fetch_at_once(raw_server: RawServer) -> None:
    url = await raw_server(endless_hints)
    http = client(max_informational_responses=16)
    await http.start()
    floods = INFORMATIONAL_FLOODS._value.get()
    before = rss_bytes()
    started = time.monotonic()
    try:
        response = await http.fetch(url)
    finally:
        await http.stop()
    assert (response.status, response.error) == (0, ERROR_TOO_MANY_INFORMATIONAL)
    assert response.is_network_error
    assert time.monotonic() - started < 2  # not the total timeout of 10 s
    assert INFORMATIONAL_FLOODS._value.get() == floods + 1
    assert rss_bytes() - before < 32 * MiB


async def test_hints_up_to_the_cap_are_skipped_on_every_request_of_a_connection(raw_server: RawServer) -> None:
    url = await raw_server(hints_then_page(4))
    http = client(max_informational_responses=4)
    await http.start()
    try:
        first, second = await http.fetch(url), await http.fetch(url)  # the count starts again per response
    finally:
        await http.stop()
    assert (first.status, first.body, second.status, second.body) == (200, PAGE, 200, PAGE)


async def test_one_hint_over_the_cap_fails(raw_server: RawServer) -> None:
    url = await raw_server(hints_then_page(5))
    http = client(max_informational_responses=4)
    await http.start()
    try:
        response = await http.fetch(url)
    finally:
        await http.stop()
    assert response.error == ERROR_TOO_MANY_INFORMATIONAL


async def test_the_connector_refuses_a_negative_cap() -> None:
    with pytest.raises(ValueError):
        BoundedConnector(max_informational=-1)


async def test_the_simulated_webs_early_hints_host(tmp_path: Path) -> None:
    web = build_web(SimWebConfig(seed=1, hosts=2, pages=5, hub_host_ratio=0.0))
    server = SimWebServer(web, SimClock.frozen(web.start_time), hostile=HostileWeb())
    await server.start()
    http = HttpFetcher(user_agent="t", connect_timeout=2, total_timeout=10, max_body_bytes=MiB, max_redirects=5,
                       proxy=server.url)
    await http.start()
    try:
        endless = await http.fetch(f"http://{hostile_host('early-hints')}/")
        few = await http.fetch(f"http://{hostile_host('early-hints')}/few")
    finally:
        await http.stop()
        await server.stop()
    assert endless.error == ERROR_TOO_MANY_INFORMATIONAL and endless.elapsed < 2
    assert few.status == 200 and b"three early hints" in few.body
