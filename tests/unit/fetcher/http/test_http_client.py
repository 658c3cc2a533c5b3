"""HttpFetcher against local servers: caps, redirects, timeouts, proxy and host map."""

from __future__ import annotations

import asyncio
import socket
import time
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
from aiohttp import web

from services.fetcher.http.http_client import HttpFetcher


def _gzip_bomb(decoded_size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip container
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(decoded_size // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    return _gzip_bomb(50 * 1024 * 1024)


async def test_plain_page_has_status_headers_body_and_user_agent(serve, text_app, make_fetcher) -> None:
    server = await serve(text_app({"/": (200, "text/html", "<p>hello</p>")}))
    fetcher = await make_fetcher()
    response = await fetcher.fetch(server.url("/"))
    assert response.error == ""
    assert response.status == 200
    assert response.body == b"<p>hello</p>"
    assert response.content_type == "text/html"
    assert (
        response.header(
            "content-type",
        )
        is not None
    )
    assert response.final_url == server.url("/")
    assert response.redirect_chain == []
    assert not response.truncated
    assert response.elapsed > 0
    assert server.requests[0].headers["User-Agent"].startswith("trawl-test/1.0")


async def test_endless_body_is_cut_at_the_cap(serve, make_fetcher) -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        chunk = b"<p>" + b"x" * 8192 + b"</p>"
        try:
            while True:
                await response.write(chunk)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    app = web.Application()
    app.router.add_get("/endless", endless)
    server = await serve(app)
    fetcher = await make_fetcher(max_body_bytes=100_000)
    started = time.monotonic()
    response = await fetcher.fetch(server.url("/endless"))
    assert response.error == ""
    assert response.truncated
    assert len(response.body) == 100_000
    assert time.monotonic() - started < 2.0


async def test_body_exactly_at_cap_is_not_truncated(serve, text_app, make_fetcher) -> None:
    server = await serve(text_app({"/": (200, "text/plain", "a" * 1000)}))
    fetcher = await make_fetcher(max_body_bytes=1000)
    response = await fetcher.fetch(server.url("/"))
    assert len(response.body) == 1000
    assert not response.truncated


async def test_gzip_bomb_is_decoded_only_up_to_the_cap(serve, make_fetcher, gzip_bomb: bytes) -> None:
    async def bomb(request: web.Request) -> web.Response:
        return web.Response(body=gzip_bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})

    app = web.Application()
    app.router.add_get("/bomb", bomb)
    server = await serve(app)
    cap = 1024 * 1024
    fetcher = await make_fetcher(max_body_bytes=cap)
    assert len(gzip_bomb) < 200 * 1024  # 50 MiB of zeros compress to about 50 KiB
    tracemalloc.start()
    try:
        response = await fetcher.fetch(server.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.error == ""
    assert response.truncated
    assert response.body == bytes(cap)
    assert peak < 16 * cap, f"peak traced memory {peak} bytes"


async def test_redirect_chain_with_relative_and_absolute_locations(serve, make_fetcher) -> None:
    app = web.Application()
    server_box: list[str] = []

    async def first(request: web.Request) -> web.Response:
        raise web.HTTPFound("../b/second?x=1#frag")

    async def second(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently(server_box[0] + "/final")

    async def final(request: web.Request) -> web.Response:
        return web.Response(text="done", content_type="text/html")

    app.router.add_get("/a/first", first)
    app.router.add_get("/b/second", second)
    app.router.add_get("/final", final)
    server = await serve(app)
    server_box.append(server.origin)
    fetcher = await make_fetcher()
    response = await fetcher.fetch(server.url("/a/first"))
    assert response.error == ""
    assert response.status == 200
    assert response.body == b"done"
    assert response.redirect_chain == [server.url("/a/first"), server.url("/b/second?x=1")]
    assert response.final_url == server.url("/final")
    assert server.paths() == ["/a/first", "/b/second?x=1", "/final"]


async def test_redirect_loop_is_detected(serve, make_fetcher) -> None:
    app = web.Application()

    async def ping(request: web.Request) -> web.Response:
        raise web.HTTPFound("/pong")

    async def pong(request: web.Request) -> web.Response:
        raise web.HTTPFound("/ping")

    app.router.add_get("/ping", ping)
    app.router.add_get("/pong", pong)
    server = await serve(app)
    fetcher = await make_fetcher(max_redirects=10)
    response = await fetcher.fetch(server.url("/ping"))
    assert response.status == 0
    assert response.error == "redirect_loop"
    assert server.paths() == ["/ping", "/pong"]
    assert response.redirect_chain == [server.url("/ping"), server.url("/pong")]


async def test_a_redirect_to_itself_is_a_loop_at_once(serve, make_fetcher) -> None:
    app = web.Application()

    async def again(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently("/again")

    app.router.add_get("/again", again)
    server = await serve(app)
    fetcher = await make_fetcher(max_redirects=10)
    response = await fetcher.fetch(server.url("/again"))
    assert response.error == "redirect_loop"
    assert server.paths() == ["/again"]
    assert response.redirect_chain == [server.url("/again")]


async def test_too_many_redirects(serve, make_fetcher) -> None:
    app = web.Application()

    async def hop(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(f"/r/{int(request.match_info['n']) + 1}")

    app.router.add_get("/r/{n}", hop)
    server = await serve(app)
    fetcher = await make_fetcher(max_redirects=3)
    response = await fetcher.fetch(server.url("/r/0"))
    assert response.error == "too_many_redirects"
    assert server.paths() == ["/r/0", "/r/1", "/r/2", "/r/3"]
    # A per-call limit overrides the client's.
    response = await fetcher.fetch(server.url("/r/100"), max_redirects=1)
    assert response.error == "too_many_redirects"
    assert server.paths()[-2:] == ["/r/100", "/r/101"]


async def test_allow_callback_stops_a_hop_before_it_is_requested(serve, make_fetcher) -> None:
    app = web.Application()

    async def start(request: web.Request) -> web.Response:
        raise web.HTTPFound("/private/page")

    async def private(request: web.Request) -> web.Response:
        return web.Response(text="secret")

    app.router.add_get("/start", start)
    app.router.add_get("/private/page", private)
    server = await serve(app)
    fetcher = await make_fetcher()
    asked: list[str] = []

    async def allow(url: str) -> bool:
        asked.append(url)
        return "/private/" not in url

    response = await fetcher.fetch(server.url("/start"), allow=allow)
    assert response.error == f"disallowed_redirect:{server.url('/private/page')}"
    assert response.status == 0
    assert asked == [server.url("/private/page")]
    assert server.paths() == ["/start"]


async def test_redirect_to_other_scheme_is_an_invalid_redirect(serve, make_fetcher) -> None:
    app = web.Application()

    async def start(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "ftp://example.invalid/file"})

    app.router.add_get("/start", start)
    server = await serve(app)
    fetcher = await make_fetcher()
    response = await fetcher.fetch(server.url("/start"))
    assert response.error.startswith("invalid_redirect:ftp://")


async def test_total_timeout_with_a_server_that_never_answers(serve, make_fetcher) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(10)
        return web.Response(text="late")

    app = web.Application()
    app.router.add_get("/slow", slow)
    server = await serve(app)
    fetcher = await make_fetcher(total_timeout=0.3)
    started = time.monotonic()
    response = await fetcher.fetch(server.url("/slow"))
    assert response.status == 0
    assert response.error == "timeout"
    assert response.is_network_error
    assert 0.25 < time.monotonic() - started < 1.5


async def test_total_timeout_covers_a_trickling_body(serve, make_fetcher) -> None:
    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        for _ in range(200):
            await response.write(b"x")
            await asyncio.sleep(0.05)
        return response

    app = web.Application()
    app.router.add_get("/trickle", trickle)
    server = await serve(app)
    fetcher = await make_fetcher(total_timeout=0.3)
    started = time.monotonic()
    response = await fetcher.fetch(server.url("/trickle"))
    assert response.error == "timeout"
    assert time.monotonic() - started < 1.5


@pytest.fixture
def unaccepting_port() -> Iterator[int]:
    """A listening port whose accept queue is full, so new connections hang in SYN."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    yield port
    for sock in [*fillers, listener]:
        sock.close()


async def test_connect_timeout(make_fetcher, unaccepting_port: int) -> None:
    fetcher = await make_fetcher(connect_timeout=0.3, total_timeout=5.0)
    started = time.monotonic()
    response = await fetcher.fetch(f"http://127.0.0.1:{unaccepting_port}/")
    assert response.status == 0
    assert response.error == "connect_timeout"
    assert time.monotonic() - started < 2.0


async def test_connection_refused_is_a_connect_error(make_fetcher) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    fetcher = await make_fetcher()
    response = await fetcher.fetch(f"http://127.0.0.1:{port}/")
    assert response.status == 0
    assert response.error.startswith("connect_error:")
    assert response.is_network_error


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "not a url", "http:///nohost", "mailto:a@b.c", ""])
async def test_invalid_urls_are_reported_not_raised(make_fetcher, url: str) -> None:
    fetcher = await make_fetcher()
    response = await fetcher.fetch(url)
    assert response.status == 0
    assert response.error == "invalid_url"


async def test_retry_after_seconds_and_http_date(serve, make_fetcher) -> None:
    async def busy(request: web.Request) -> web.Response:
        return web.Response(status=503, text="busy", headers={"Retry-After": "120"})

    async def limited(request: web.Request) -> web.Response:
        return web.Response(
            status=429,
            text="slow down",
            headers={"Date": "Wed, 21 Oct 2015 07:28:00 GMT", "Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"},
        )

    app = web.Application()
    app.router.add_get("/busy", busy)
    app.router.add_get("/limited", limited)
    server = await serve(app)
    fetcher = await make_fetcher()
    busy_response = await fetcher.fetch(server.url("/busy"))
    assert busy_response.status == 503
    assert busy_response.error == ""
    assert busy_response.retry_after == 120.0
    limited_response = await fetcher.fetch(server.url("/limited"))
    assert limited_response.status == 429
    assert limited_response.retry_after == 30.0


async def test_body_of_an_unaccepted_type_is_not_kept(serve, make_fetcher) -> None:
    async def image(request: web.Request) -> web.Response:
        return web.Response(body=b"\x89PNG" + bytes(300_000), content_type="image/png")

    app = web.Application()
    app.router.add_get("/img.png", image)
    server = await serve(app)
    fetcher = await make_fetcher(max_body_bytes=1_000_000)
    response = await fetcher.fetch(server.url("/img.png"))
    assert response.status == 200
    assert response.content_type == "image/png"
    assert response.body == b""
    everything = await fetcher.fetch(server.url("/img.png"), accept_all_types=True)
    assert everything.body.startswith(b"\x89PNG")
    assert fetcher.accepts("text/html")
    assert not fetcher.accepts("application/pdf")
    assert fetcher.accepts("")


async def test_every_request_goes_through_the_proxy(serve, text_app, make_fetcher, forward_proxy) -> None:
    proxy, routes = forward_proxy
    origin_server = await serve(text_app({"/page": (200, "text/html", "via proxy")}))
    routes["site-b.test"] = origin_server.port
    fetcher = await make_fetcher(proxy=proxy.origin)
    url = f"http://site-b.test:{origin_server.port}/page"
    response = await fetcher.fetch(url)
    assert response.error == ""
    assert response.body == b"via proxy"
    assert [r.raw_path for r in proxy.requests] == [url]  # absolute-form request target
    assert origin_server.requests[0].host == f"site-b.test:{origin_server.port}"


async def test_host_map_pins_a_name_to_an_address(serve, text_app, make_fetcher) -> None:
    server = await serve(text_app({"/": (200, "text/html", "site a")}))
    fetcher = await make_fetcher(host_map={"site-a.test": "127.0.0.1"})
    response = await fetcher.fetch(f"http://SITE-A.test:{server.port}/")
    assert response.error == ""
    assert response.body == b"site a"
    assert server.requests[0].host == f"site-a.test:{server.port}"
    # Hosts outside the map still go through the ordinary resolver.
    other = await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
    assert other.body == b"site a"
    unknown = await fetcher.fetch(f"http://site-z.test:{server.port}/")
    assert unknown.status == 0
    assert unknown.is_network_error


def test_host_map_rejects_values_that_are_not_addresses() -> None:
    with pytest.raises(ValueError, match="not an IP address"):
        HttpFetcher(
            user_agent="x",
            connect_timeout=1,
            total_timeout=1,
            max_body_bytes=1,
            max_redirects=1,
            host_map={"a.test": "localhost"},
        )


async def test_fetch_before_start_is_a_programming_error() -> None:
    fetcher = HttpFetcher(user_agent="x", connect_timeout=1, total_timeout=1, max_body_bytes=1, max_redirects=1)
    with pytest.raises(RuntimeError):
        await fetcher.fetch("http://127.0.0.1/")
