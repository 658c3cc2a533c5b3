"""FetchCore against local servers: robots before requests, politeness, outcome classification."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from services.fetcher.clock import Clock, FakeClock, SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.robots.robots import RobotsCache

CoreFactory = Callable[..., Awaitable[FetchCore]]


@pytest.fixture
def make_core(make_fetcher) -> CoreFactory:
    """Build a FetchCore wired as the service wires it; keyword arguments go to HostPoliteness."""

    async def build(
        clock: Clock | None = None, *, fetcher_settings: dict[str, Any] | None = None, **politeness_settings: Any
    ) -> FetchCore:
        clock = clock if clock is not None else SystemClock()
        http = await make_fetcher(clock=clock, **(fetcher_settings or {}))
        settings: dict[str, Any] = {
            "min_delay": 0.0,
            "max_crawl_delay": 30.0,
            "response_time_factor": 0.0,
            "max_backoff": 1.0,
            "park_after_failures": 5,
            "max_wait": 30.0,
        }
        settings.update(politeness_settings)
        politeness = HostPoliteness(clock, **settings)
        robots = RobotsCache(polite_robots_fetch(http, politeness), user_agent_token="trawl", clock=clock)
        return FetchCore(http, robots, politeness, clock)

    return build


def site(robots_txt: str | None, pages: dict[str, tuple[int, str, bytes]]) -> web.Application:
    """An app with an optional robots.txt and pages given as path -> (status, content type, body)."""
    app = web.Application()
    if robots_txt is not None:

        async def robots(request: web.Request) -> web.Response:
            return web.Response(text=robots_txt, content_type="text/plain")

        app.router.add_get("/robots.txt", robots)
    for path, (status, content_type, body) in pages.items():

        async def page(
            request: web.Request, status: int = status, content_type: str = content_type, body: bytes = body
        ) -> web.Response:
            if 300 <= status < 400:
                return web.Response(status=status, headers={"Location": body.decode()})
            return web.Response(status=status, body=body, content_type=content_type)

        app.router.add_get(path, page)
    return app


HTML = "text/html"


async def test_a_disallowed_url_is_never_requested(serve, make_core) -> None:
    server = await serve(site("User-agent: *\nDisallow: /private\n", {"/public": (200, HTML, b"<p>ok</p>")}))
    core = await make_core()
    attempt = await core.fetch(server.url("/private/page"))
    assert attempt.outcome == "robots_disallowed"
    assert attempt.response is None
    assert not attempt.retryable
    assert server.paths() == ["/robots.txt"]
    ok = await core.fetch(server.url("/public"))
    assert ok.outcome == "ok"
    assert ok.response is not None and ok.response.body == b"<p>ok</p>"
    assert server.paths() == ["/robots.txt", "/public"]
    assert core.outcomes == {"robots_disallowed": 1, "ok": 1}


async def test_unreachable_robots_txt_blocks_the_host_for_now(serve, make_core) -> None:
    app = site(None, {"/page": (200, HTML, b"x")})

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=503, text="down")

    app.router.add_get("/robots.txt", robots)
    server = await serve(app)
    core = await make_core(park_after_failures=10)
    attempt = await core.fetch(server.url("/page"))
    assert attempt.outcome == "robots_disallowed"
    assert attempt.retryable
    assert server.paths() == ["/robots.txt"]


def hanging(seconds: float) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler that answers only after ``seconds`` (longer than the fetcher waits)."""

    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(seconds)
        return web.Response(text="late")

    return handler


async def test_a_robots_txt_that_times_out_makes_the_page_a_retryable_network_error(serve, make_core) -> None:
    app = site(None, {"/page": (200, HTML, b"x")})
    app.router.add_get("/robots.txt", hanging(5))
    server = await serve(app)
    core = await make_core(fetcher_settings={"total_timeout": 0.3})
    first = await core.fetch(server.url("/page"))
    assert (first.outcome, first.retryable) == ("network_error", True)
    assert first.detail == "robots.txt not fetched: timeout"
    again = await core.fetch(server.url("/page"))  # within the short verdict: robots.txt is not asked again
    assert (again.outcome, again.retryable) == ("network_error", True)
    assert server.paths() == ["/robots.txt"]  # the page itself was never requested


async def test_robots_fetch_takes_the_host_slot_and_crawl_delay_is_applied(serve, make_core) -> None:
    server = await serve(site("User-agent: *\nCrawl-delay: 7\n", {"/a": (200, HTML, b"a")}))
    clock = FakeClock()
    core = await make_core(clock, min_delay=5.0)
    attempt = await core.fetch(server.url("/a"))
    assert attempt.outcome == "ok"
    # robots.txt at t=0; its Crawl-delay (7, over min_delay 5) spaces the page from it and what follows.
    assert clock.now() == pytest.approx(7.0)
    assert attempt.host_next_allowed_at == pytest.approx(14.0)
    assert server.paths() == ["/robots.txt", "/a"]


async def test_concurrent_fetches_share_robots_and_keep_their_distance(serve, make_core) -> None:
    pages = {f"/p{i}": (200, HTML, b"page") for i in range(5)}
    server = await serve(site("User-agent: *\nDisallow:\n", pages))
    core = await make_core(min_delay=0.1)
    attempts = await asyncio.gather(*(core.fetch(server.url(path)) for path in pages))
    assert [a.outcome for a in attempts] == ["ok"] * 5
    assert server.paths()[0] == "/robots.txt"
    assert server.paths().count("/robots.txt") == 1
    arrivals = [r.at for r in server.requests]
    for before, after in itertools.pairwise(arrivals):
        assert after - before >= 0.09


async def test_a_redirect_to_a_disallowed_path_is_not_followed(serve, make_core) -> None:
    server = await serve(
        site(
            "User-agent: *\nDisallow: /private\n",
            {"/go": (302, HTML, b"/private/target"), "/private/target": (200, HTML, b"secret")},
        )
    )
    core = await make_core()
    attempt = await core.fetch(server.url("/go"))
    assert attempt.outcome == "redirect_disallowed"
    assert not attempt.retryable
    assert server.paths() == ["/robots.txt", "/go"]


async def test_a_redirect_to_another_origin_checks_that_origins_robots(serve, make_core) -> None:
    # Both servers are on host 127.0.0.1, so the hop's robots.txt is fetched while that host's slot is held.
    other = await serve(site("User-agent: trawl\nDisallow: /\n", {"/landing": (200, HTML, b"no")}))
    allowed_other = await serve(site(None, {"/landing": (200, HTML, b"<p>landed</p>")}))
    first = await serve(
        site(
            None,
            {
                "/to-other": (301, HTML, other.url("/landing").encode()),
                "/to-allowed": (301, HTML, allowed_other.url("/landing").encode()),
            },
        )
    )
    core = await make_core(max_wait=5.0)
    blocked = await asyncio.wait_for(core.fetch(first.url("/to-other")), 10)
    assert blocked.outcome == "redirect_disallowed"
    assert other.paths() == ["/robots.txt"]
    followed = await asyncio.wait_for(core.fetch(first.url("/to-allowed")), 10)
    assert followed.outcome == "ok"
    assert followed.response is not None
    assert followed.response.final_url == allowed_other.url("/landing")
    assert followed.response.redirect_chain == [first.url("/to-allowed")]
    assert allowed_other.paths() == ["/robots.txt", "/landing"]


@pytest.mark.parametrize(
    ("status", "retryable"), [(404, False), (410, False), (500, True), (503, True), (429, True), (408, True)]
)
async def test_http_errors(serve, make_core, status: int, retryable: bool) -> None:
    server = await serve(site(None, {"/x": (status, HTML, b"error page")}))
    core = await make_core()
    attempt = await core.fetch(server.url("/x"))
    assert attempt.outcome == "http_error"
    assert attempt.retryable is retryable
    assert attempt.response is not None and attempt.response.status == status


async def test_unsupported_type_and_too_large(serve, make_core) -> None:
    server = await serve(
        site(
            None,
            {"/doc.pdf": (200, "application/pdf", b"%PDF" + bytes(5000)), "/big": (200, HTML, b"x" * 5000)},
        )
    )
    core = await make_core(fetcher_settings={"max_body_bytes": 1000})
    pdf = await core.fetch(server.url("/doc.pdf"))
    assert pdf.outcome == "unsupported_type"
    assert pdf.response is not None and pdf.response.body == b""
    assert pdf.detail == "application/pdf"
    big = await core.fetch(server.url("/big"))
    assert big.outcome == "too_large"
    assert big.response is not None and len(big.response.body) == 1000


async def test_invalid_urls_are_rejected_without_traffic(make_core) -> None:
    core = await make_core()
    for url in ["mailto:someone@example.org", "http://", "/relative/path", "ftp://127.0.0.1/file"]:
        attempt = await core.fetch(url)
        assert attempt.outcome == "invalid_url"
        assert attempt.response is None
        assert not attempt.retryable


async def test_an_unreachable_host_is_retryable_and_not_requested_past_robots(make_core) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    core = await make_core()
    attempt = await core.fetch(f"http://127.0.0.1:{port}/page")
    assert attempt.outcome == "robots_disallowed"
    assert attempt.retryable
    assert "connect_error" in attempt.detail


async def test_a_timeout_is_a_retryable_network_error(serve, make_core) -> None:
    app = site(None, {})
    app.router.add_get("/hang", hanging(10))
    server = await serve(app)
    core = await make_core(fetcher_settings={"total_timeout": 0.3})
    attempt = await core.fetch(server.url("/hang"))
    assert attempt.outcome == "network_error"
    assert attempt.retryable
    assert attempt.detail == "timeout"


async def test_a_parked_host_is_refused_without_a_request(serve, make_core) -> None:
    server = await serve(site(None, {"/fail": (500, HTML, b"oops"), "/fine": (200, HTML, b"fine")}))
    clock = FakeClock()
    core = await make_core(clock, min_delay=1.0, max_backoff=2.0, park_after_failures=1, park_duration=50.0)
    failed = await core.fetch(server.url("/fail"))
    assert failed.outcome == "http_error"
    assert failed.retryable
    assert failed.host_next_allowed_at == pytest.approx(clock.now() + 50.0)
    refused = await core.fetch(server.url("/fine"))
    assert refused.outcome == "host_parked"
    assert refused.retryable
    assert refused.response is None
    assert "consecutive failures" in refused.detail
    assert server.paths() == ["/robots.txt", "/fail"]
    clock.advance(50.0)
    assert (await core.fetch(server.url("/fine"))).outcome == "ok"


async def test_a_target_the_ssrf_guard_refuses_is_final_and_asks_nothing_not_even_robots_txt(
    serve, make_core
) -> None:
    from services.fetcher.http.address_guard import AddressPolicy

    server = await serve(site("User-agent: *\nDisallow:\n", {"/": (200, HTML, b"<p>internal</p>")}))
    port = server.url("/").split(":")[2].split("/")[0]
    guarded = {"address_policy": AddressPolicy(), "host_map": {"inside.test": "127.0.0.1"}}
    core = await make_core(fetcher_settings=guarded)
    for url in (server.url("/"), f"http://inside.test:{port}/"):
        attempt = await core.fetch(url)
        assert (attempt.outcome, attempt.retryable, attempt.response) == ("invalid_url", False, None)
        assert attempt.detail.startswith("blocked_address:") and "loopback" in attempt.detail
    assert server.paths() == []
