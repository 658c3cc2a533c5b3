"""The simulated web's server on 127.0.0.1: proxy and Host-header modes, statuses, headers, request log."""

from __future__ import annotations

import asyncio
import gzip
import socket
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from libs.simweb import SimClock, SimWeb, SimWebConfig, SimWebServer, build_web, read_log_file
from libs.simweb.log_checks import max_concurrency_per_host, min_gap_per_host
from libs.simweb.render import http_time

UA = "trawl/0.1 (+http://trawl.test/bot)"


class LoopbackResolver(AbstractResolver):
    """Every host name resolves to 127.0.0.1: the static host map a deployment's fetcher can be given."""

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET,
                      ) -> list[ResolveResult]:
        return [ResolveResult(hostname=host, host="127.0.0.1", port=port, family=socket.AF_INET, proto=0,
                              flags=socket.AI_NUMERICHOST)]

    async def close(self) -> None:
        return None


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SimWebConfig(seed=8, hosts=20, pages=300, hub_host_ratio=0.1))


@pytest.fixture
async def server(web: SimWeb, tmp_path: Path) -> AsyncIterator[SimWebServer]:
    running = SimWebServer(web, SimClock.frozen(web.start_time), log_file=tmp_path / "requests.jsonl")
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(headers={"User-Agent": UA}) as client:
        yield client


def _host(web: SimWeb, variant: str) -> str:
    return next(name for name, spec in web.hosts.items() if spec.robots == variant)


async def _get(session: aiohttp.ClientSession, url: str, **kwargs: Any) -> tuple[int, str, dict[str, str]]:
    async with session.get(url, allow_redirects=False, **kwargs) as response:
        return response.status, await response.text(), dict(response.headers)


async def test_serves_pages_and_robots_through_the_proxy(web: SimWeb, server: SimWebServer,
                                                          session: aiohttp.ClientSession) -> None:
    page = next(p for p in web.pages_at().values() if p.role == "page")
    status, body, headers = await _get(session, page.url, proxy=server.url)
    assert status == 200 and body == web.html(page.url)
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Last-Modified"] == http_time(page.published_at)
    host = _host(web, "disallow_private")
    status, body, _ = await _get(session, f"http://{host}/robots.txt", proxy=server.url)
    assert status == 200 and "Disallow: /private/" in body
    assert (await _get(session, f"http://{_host(web, 'missing')}/robots.txt", proxy=server.url))[0] == 404
    assert (await _get(session, f"http://{_host(web, 'unavailable')}/robots.txt", proxy=server.url))[0] == 503


async def test_serves_by_host_header(web: SimWeb, server: SimWebServer,
                                     session: aiohttp.ClientSession) -> None:
    page = next(p for p in web.pages_at().values() if p.role == "page")
    status, body, _ = await _get(session, f"{server.url}{page.path}", headers={"Host": page.host})
    assert status == 200 and body == web.html(page.url)
    with_port = {"Host": f"{page.host}:{server.port}"}
    status, body, _ = await _get(session, f"{server.url}/robots.txt", headers=with_port)
    assert status == web.robots_txt(page.host)[0]


async def test_serves_through_a_static_host_map(web: SimWeb, server: SimWebServer) -> None:
    page = next(p for p in web.pages_at().values() if p.role == "page")
    connector = aiohttp.TCPConnector(resolver=LoopbackResolver())
    async with aiohttp.ClientSession(connector=connector) as client:
        status, body, _ = await _get(client, f"http://{page.host}:{server.port}{page.path}")
    assert status == 200 and body == web.html(page.url)


async def test_unknown_hosts_paths_and_methods(web: SimWeb, server: SimWebServer,
                                               session: aiohttp.ClientSession) -> None:
    host = next(iter(web.hosts))
    assert (await _get(session, "http://nowhere.test/", proxy=server.url))[0] == 404
    assert (await _get(session, "http://nowhere.test/robots.txt", proxy=server.url))[0] == 404
    assert (await _get(session, f"http://{host}/no/such/page.html", proxy=server.url))[0] == 404
    async with session.post(f"http://{host}/", proxy=server.url) as response:
        assert response.status == 405
    status, body, _ = await _get(session, f"{server.url}/")
    assert status == 200 and all(url in body for url in web.home_pages())


async def test_request_log_records_every_request(web: SimWeb, server: SimWebServer,
                                                 session: aiohttp.ClientSession, tmp_path: Path) -> None:
    host = next(iter(web.hosts))
    urls = [f"http://{host}/", f"http://{host}/robots.txt", f"http://{host}/missing.html?x=1"]
    statuses = [(await _get(session, url, proxy=server.url))[0] for url in urls]
    log = server.request_log
    assert [(r.host, r.path, r.status) for r in log] == [
        (host, "/", statuses[0]), (host, "/robots.txt", statuses[1]), (host, "/missing.html?x=1", 404)]
    assert all(r.user_agent == UA and r.method == "GET" for r in log)
    assert all(r.started_at <= r.finished_at for r in log)
    assert log[0].finished_at <= log[1].started_at
    assert read_log_file(tmp_path / "requests.jsonl") == log
    server.request_log.clear()  # a copy: the server's log is untouched
    assert len(server.request_log) == 3
    server.clear_log()
    assert server.request_log == []


async def test_gzip_and_conditional_get(web: SimWeb, server: SimWebServer,
                                        session: aiohttp.ClientSession) -> None:
    page = next(p for p in web.pages_at().values() if p.role == "page")
    async with session.get(page.url, proxy=server.url, headers={"Accept-Encoding": "gzip"},
                           auto_decompress=False) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(await response.read()).decode() == web.html(page.url)
    async with session.get(page.url, proxy=server.url, headers={"Accept-Encoding": "identity"}) as response:
        assert "Content-Encoding" not in response.headers
    plain = SimWebServer(web, SimClock.frozen(web.start_time), gzip=False)
    await plain.start()
    try:
        async with session.get(page.url, proxy=plain.url, headers={"Accept-Encoding": "gzip"}) as response:
            assert "Content-Encoding" not in response.headers
    finally:
        await plain.stop()
    since = {"If-Modified-Since": http_time(page.published_at)}
    assert (await _get(session, page.url, proxy=server.url, headers=since))[0] == 304
    earlier = {"If-Modified-Since": http_time(page.published_at - timedelta(seconds=1))}
    assert (await _get(session, page.url, proxy=server.url, headers=earlier))[0] == 200


async def test_hub_grows_as_the_clock_advances(web: SimWeb, server: SimWebServer,
                                               session: aiohttp.ClientSession) -> None:
    hub = web.hub_urls()[0]
    before = (await _get(session, hub, proxy=server.url))[1]
    upcoming = next(url for url, at in web.hub_articles(hub) if at > web.start_time)
    assert upcoming not in before
    assert (await _get(session, upcoming, proxy=server.url))[0] == 404
    server.clock.advance(web.config.hub_horizon)
    after = (await _get(session, hub, proxy=server.url))[1]
    assert after != before
    assert (await _get(session, upcoming, proxy=server.url))[0] == 200


async def test_latency_and_concurrency_show_in_the_log(session: aiohttp.ClientSession) -> None:
    slow = build_web(SimWebConfig(seed=1, hosts=3, pages=20, hub_host_ratio=0.0, latency_range=(0.2, 0.2)))
    server = SimWebServer(slow, SimClock.frozen(slow.start_time))
    await server.start()
    try:
        host = next(iter(slow.hosts))
        began = asyncio.get_running_loop().time()
        await asyncio.gather(*(_get(session, f"http://{host}/", proxy=server.url) for _ in range(3)))
        assert asyncio.get_running_loop().time() - began < 0.5  # served side by side
        await _get(session, f"http://{host}/robots.txt", proxy=server.url)
        log = server.request_log
    finally:
        await server.stop()
    assert all(r.finished_at - r.started_at >= 0.19 for r in log)
    assert max_concurrency_per_host(log) == {host: 3}
    assert min_gap_per_host(log)[host] < 0


async def test_absolute_form_target_wins_over_the_host_header(web: SimWeb, server: SimWebServer) -> None:
    """A proxy request line names the target; RFC 9112 says its host overrides the Host header."""
    page = next(p for p in web.pages_at().values() if p.role == "page")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(f"GET {page.url} HTTP/1.1\r\nHost: elsewhere.test\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert body.decode() == web.html(page.url)
    assert server.request_log[-1].host == page.host and server.request_log[-1].path == page.path
