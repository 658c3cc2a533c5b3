"""The simulated web's hostile hosts do what they claim, seen with a plain client."""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb.hostile import BOMB_DECODED_BYTES, HostileWeb, hostile_host
from libs.simweb.tls import self_signed_context


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[SimWebServer]:
    web = build_web(SimWebConfig(seed=1, hosts=3, pages=10, hub_host_ratio=0.0))
    running = SimWebServer(web, SimClock.frozen(web.start_time), hostile=HostileWeb(),
                           tls=self_signed_context(tmp_path))
    await running.start()
    yield running
    await running.stop()


async def fetch(server: SimWebServer, part: str, path: str) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession(auto_decompress=False) as session, session.get(
        f"http://{hostile_host(part)}{path}", proxy=server.url, allow_redirects=False
    ) as response:
        body = b""
        while len(body) < 2_000_000:
            chunk = await response.content.read(2_000_000 - len(body))
            if not chunk:
                break
            body += chunk
        return response.status, dict(response.headers), body


async def test_robots_txt_is_missing_on_hostile_hosts_except_the_robots_ones(server: SimWebServer) -> None:
    assert (await fetch(server, "huge", "/robots.txt"))[0] == 404
    status, _headers, body = await fetch(server, "robots-huge", "/robots.txt")
    assert status == 200 and len(body) > 500 * 1024
    assert body.startswith(b"User-agent: *\nDisallow: /early/\n") and body.endswith(b"Disallow: /late/\n")
    assert (await fetch(server, "robots-500", "/robots.txt"))[0] == 500
    hops = []
    path = "/robots.txt"
    while True:
        status, headers, body = await fetch(server, "robots-redirect-6", path)
        if status != 301:
            break
        path = headers["Location"]
        hops.append(path)
    assert len(hops) == 6 and body == b"User-agent: *\nDisallow: /private/\n"


async def test_bodies_that_never_end_drip_or_explode(server: SimWebServer) -> None:
    status, headers, body = await fetch(server, "huge", "/")
    assert status == 200 and len(body) == 2_000_000  # and more was coming
    status, headers, body = await fetch(server, "bomb", "/")
    assert headers["Content-Encoding"] == "gzip" and len(body) < 2_000_000
    decoded = zlib.decompressobj(31).decompress(body, BOMB_DECODED_BYTES + 1)
    assert len(decoded) == BOMB_DECODED_BYTES and not decoded.strip(b"\x00")
    async with aiohttp.ClientSession() as session, session.get(
        f"http://{hostile_host('slow-drip')}/slow", proxy=server.url
    ) as response:
        first = await response.content.readany()
        assert 0 < len(first) <= 10


async def test_redirects_charsets_and_types(server: SimWebServer) -> None:
    assert (await fetch(server, "redirect-loop", "/a"))[1]["Location"] == "/b"
    assert (await fetch(server, "redirect-loop", "/b"))[1]["Location"] == "/a"
    assert (await fetch(server, "redirect-chain", "/3"))[1]["Location"] == "/2"
    assert (await fetch(server, "redirect-chain", "/0"))[0] == 200
    status, headers, body = await fetch(server, "bad-charset", "/invalid")
    assert "utf-8" in headers["Content-Type"]
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert "x-no-such-charset" in (await fetch(server, "bad-charset", "/unknown"))[1]["Content-Type"]
    assert (await fetch(server, "types", "/doc.pdf"))[1]["Content-Type"] == "application/pdf"
    assert "Content-Type" not in (await fetch(server, "types", "/untyped"))[1]
    assert (await fetch(server, "ssrf", "/"))[1]["Location"].startswith("http://169.254.169.254/")
    status, headers, body = await fetch(server, "busy", "/")
    assert (status, headers["Retry-After"]) == (503, "2")


async def test_broken_connections_and_malformed_answers_fail_on_the_client(server: SimWebServer) -> None:
    with pytest.raises(aiohttp.ClientPayloadError):
        await fetch(server, "reset", "/mid-body")
    with pytest.raises(aiohttp.ClientConnectionError):
        await fetch(server, "reset", "/at-once")
    with pytest.raises(aiohttp.ClientResponseError):
        await fetch(server, "malformed", "/header-line")
    with pytest.raises(aiohttp.ClientResponseError):
        await fetch(server, "malformed", "/status-line")
    await asyncio.sleep(0.1)
    logged = {(r.host, r.path): r.status for r in server.request_log}
    assert logged[(hostile_host("reset"), "/at-once")] == 0
    assert logged[(hostile_host("malformed"), "/header-line")] == 200


async def test_the_https_port_has_a_certificate_no_one_signed(server: SimWebServer) -> None:
    url = f"https://127.0.0.1:{server.tls_port}/"
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(url)
        trusting = ssl.create_default_context()
        trusting.check_hostname = False
        trusting.verify_mode = ssl.CERT_NONE
        async with session.get(url, ssl=trusting, headers={"Host": hostile_host("tls")}) as response:
            assert response.status == 200
