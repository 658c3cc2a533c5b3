"""RobotsCache: RFC 9309 outcomes, expiry, sharing of fetches, truncation, LRU bound."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from services.fetcher.clock import FakeClock
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.robots.robots import RobotsCache, origin_of

ORIGIN = "http://site.test"
RULES = """
User-agent: *
Disallow: /private

User-agent: trawl
Disallow: /nope
Allow: /nope/but-this
Crawl-delay: 3.5

Sitemap: http://site.test/sitemap.xml
"""


class ScriptedFetch:
    """A robots.txt fetch answering from a list of responses (the last one repeats)."""

    def __init__(self, *answers: HttpResponse, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []
        self.delay = delay

    async def __call__(self, url: str) -> HttpResponse:
        self.calls.append(url)
        if self.delay:
            await asyncio.sleep(self.delay)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return HttpResponse(
            url=url,
            final_url=url,
            status=answer.status,
            body=answer.body,
            error=answer.error,
            truncated=answer.truncated,
        )


def answer(status: int, body: str = "", error: str = "") -> HttpResponse:
    return HttpResponse(url="", final_url="", status=status, body=body.encode(), error=error)


def make_cache(fetch: ScriptedFetch, clock: FakeClock, **overrides: object) -> RobotsCache:
    settings: dict[str, object] = {"user_agent_token": "trawl", "ttl": 86_400.0, "error_ttl": 600.0}
    settings.update(overrides)
    return RobotsCache(fetch, clock=clock, **settings)  # type: ignore[arg-type]


async def test_rules_from_a_2xx_file() -> None:
    fetch = ScriptedFetch(answer(200, RULES))
    robots = make_cache(fetch, FakeClock())
    assert await robots.allowed("http://site.test/ok")
    assert not await robots.allowed("http://site.test/nope/x")
    assert await robots.allowed("http://site.test/nope/but-this")
    # The group for "trawl" replaces the "*" group.
    assert await robots.allowed("http://site.test/private")
    assert await robots.crawl_delay("http://site.test/any/page") == 3.5
    assert await robots.sitemaps(ORIGIN) == ["http://site.test/sitemap.xml"]
    assert fetch.calls == ["http://site.test/robots.txt"]
    policy = await robots.policy(ORIGIN)
    assert policy.kind == "rules"
    assert robots.stats.parsed == 1
    assert robots.stats.cache_hits >= 4


async def test_request_rate_counts_as_a_crawl_delay() -> None:
    fetch = ScriptedFetch(answer(200, "User-agent: *\nCrawl-delay: 2\nRequest-rate: 1/10s\n"))
    robots = make_cache(fetch, FakeClock())
    assert await robots.crawl_delay(ORIGIN) == 10.0


async def test_a_crawl_delay_longer_than_the_limit_keeps_the_crawler_away() -> None:
    fetch = ScriptedFetch(answer(200, "User-agent: *\nCrawl-delay: 3600\nDisallow:\n"))
    robots = make_cache(fetch, FakeClock(), max_crawl_delay=300.0)
    assert not await robots.allowed("http://site.test/page")
    assert await robots.crawl_delay(ORIGIN) == 3600.0
    relaxed = make_cache(ScriptedFetch(answer(200, "User-agent: *\nCrawl-delay: 60\n")), FakeClock())
    assert await relaxed.allowed("http://site.test/page")


@pytest.mark.parametrize("status", [404, 401, 403, 410])
async def test_4xx_allows_everything(status: int) -> None:
    robots = make_cache(ScriptedFetch(answer(status)), FakeClock())
    assert await robots.allowed("http://site.test/anything")
    assert await robots.crawl_delay(ORIGIN) is None
    assert robots.stats.allow_all == 1


@pytest.mark.parametrize("error", ["too_many_redirects", "redirect_loop", "invalid_redirect:ftp://x"])
async def test_redirect_failures_count_as_unavailable(error: str) -> None:
    robots = make_cache(ScriptedFetch(answer(0, error=error)), FakeClock())
    assert await robots.allowed("http://site.test/anything")


@pytest.mark.parametrize(
    ("status", "error"), [(503, ""), (500, ""), (429, ""), (0, "connect_error:refused"), (0, "dns_error:nxdomain")]
)
async def test_5xx_or_unreachable_disallows_everything_until_error_ttl(status: int, error: str) -> None:
    clock = FakeClock()
    fetch = ScriptedFetch(answer(status, error=error), answer(200, "User-agent: *\nDisallow: /x\n"))
    robots = make_cache(fetch, clock, error_ttl=600.0)
    assert not await robots.allowed("http://site.test/page")
    policy = await robots.policy(ORIGIN)
    assert policy.temporary
    clock.advance(599)
    assert not await robots.allowed("http://site.test/page")
    assert len(fetch.calls) == 1
    clock.advance(1)
    assert await robots.allowed("http://site.test/page")
    assert not await robots.allowed("http://site.test/x")
    assert len(fetch.calls) == 2


@pytest.mark.parametrize("error", ["timeout", "connect_timeout"])
async def test_a_timeout_disallows_everything_only_for_the_timeout_ttl(error: str) -> None:
    clock = FakeClock()
    fetch = ScriptedFetch(answer(0, error=error), answer(200, "User-agent: *\nDisallow: /x\n"))
    robots = make_cache(fetch, clock, error_ttl=600.0, timeout_ttl=5.0)
    policy = await robots.policy(ORIGIN)
    assert policy.kind == "disallow_all" and policy.transient and policy.temporary
    assert policy.error == error
    clock.advance(4.9)
    assert not await robots.allowed("http://site.test/page")
    assert len(fetch.calls) == 1
    clock.advance(0.1)
    assert await robots.allowed("http://site.test/page")
    assert not (await robots.policy(ORIGIN)).transient
    assert len(fetch.calls) == 2


async def test_other_failures_are_not_transient() -> None:
    robots = make_cache(ScriptedFetch(answer(503)), FakeClock())
    assert not (await robots.policy(ORIGIN)).transient


async def test_good_verdicts_last_the_ttl() -> None:
    clock = FakeClock()
    fetch = ScriptedFetch(answer(200, "User-agent: *\nDisallow: /a\n"), answer(404))
    robots = make_cache(fetch, clock, ttl=3600.0)
    assert not await robots.allowed("http://site.test/a")
    clock.advance(3599)
    assert not await robots.allowed("http://site.test/a")
    clock.advance(1)
    assert await robots.allowed("http://site.test/a")
    assert len(fetch.calls) == 2


async def test_concurrent_callers_share_one_fetch() -> None:
    fetch = ScriptedFetch(answer(200, RULES), delay=0.05)
    robots = make_cache(fetch, FakeClock())
    results = await asyncio.gather(*(robots.allowed(f"http://site.test/p{i}") for i in range(50)))
    assert all(results)
    assert len(fetch.calls) == 1
    assert robots.stats.coalesced == 49


async def test_origins_are_separate_and_normalised() -> None:
    fetch = ScriptedFetch(answer(404))
    robots = make_cache(fetch, FakeClock())
    await robots.allowed("http://Site.TEST:80/a")
    await robots.allowed("http://site.test/b")
    await robots.allowed("https://site.test/c")
    await robots.allowed("http://site.test:8080/d")
    assert fetch.calls == [
        "http://site.test/robots.txt",
        "https://site.test/robots.txt",
        "http://site.test:8080/robots.txt",
    ]
    assert origin_of("https://A.b:443/x?y") == "https://a.b"


async def test_a_huge_file_is_cut_at_max_bytes_on_a_line_boundary() -> None:
    filler = "".join(f"Disallow: /filler-{i}\n" for i in range(40_000))  # ~ 900 KB
    text = "User-agent: *\nDisallow: /early\n" + filler + "Disallow: /late\n"
    fetch = ScriptedFetch(answer(200, text))
    robots = make_cache(fetch, FakeClock(), max_bytes=500 * 1024)
    assert not await robots.allowed("http://site.test/early")
    assert await robots.allowed("http://site.test/late")  # beyond the limit: ignored
    policy = await robots.policy(ORIGIN)
    assert policy.truncated
    assert robots.stats.truncated == 1


async def test_a_big_file_is_parsed_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threaded: list[object] = []
    to_thread = asyncio.to_thread

    async def recording(func, /, *args):
        threaded.append(func)
        return await to_thread(func, *args)

    monkeypatch.setattr("services.fetcher.robots.robots.asyncio.to_thread", recording)
    small = make_cache(ScriptedFetch(answer(200, "User-agent: *\nDisallow: /a\n")), FakeClock())
    assert not await small.allowed("http://site.test/a")
    assert threaded == []
    big_file = "User-agent: *\nDisallow: /a\n" + "".join(f"Disallow: /filler-{i}\n" for i in range(5_000))
    big = make_cache(ScriptedFetch(answer(200, big_file)), FakeClock())
    assert not await big.allowed("http://site.test/a")
    assert not await big.allowed("http://site.test/filler-4999")
    assert len(threaded) == 1


async def test_a_cut_line_is_dropped_not_half_parsed() -> None:
    text = "User-agent: *\nDisallow: /a\nDisallow: /private-area\n"
    cut_inside_last_rule = text.index("/private-area") + 3  # would leave "Disallow: /pr"
    robots = make_cache(ScriptedFetch(answer(200, text)), FakeClock(), max_bytes=cut_inside_last_rule)
    assert not await robots.allowed("http://site.test/a")
    assert await robots.allowed("http://site.test/profile")
    assert (await robots.policy(ORIGIN)).truncated


async def test_cache_is_bounded_least_recently_used_first() -> None:
    fetch = ScriptedFetch(answer(404))
    robots = make_cache(fetch, FakeClock(), max_entries=2)
    await robots.allowed("http://a.test/")
    await robots.allowed("http://b.test/")
    await robots.allowed("http://a.test/again")  # a is now the most recent
    await robots.allowed("http://c.test/")  # evicts b
    assert len(robots) == 2
    assert robots.stats.evictions == 1
    await robots.allowed("http://a.test/third")
    assert fetch.calls.count("http://a.test/robots.txt") == 1
    await robots.allowed("http://b.test/")
    assert fetch.calls.count("http://b.test/robots.txt") == 2


async def test_an_exception_from_the_fetch_reaches_every_waiter_and_is_not_cached() -> None:
    calls = 0

    async def failing(url: str) -> HttpResponse:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        raise RuntimeError("refused by politeness")

    robots = RobotsCache(failing, user_agent_token="trawl", clock=FakeClock())
    results = await asyncio.gather(*(robots.policy(ORIGIN) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert calls == 1
    assert robots.cached_policy(ORIGIN) is None
    assert robots.stats.fetch_exceptions == 1


async def test_invalid_urls_are_not_allowed() -> None:
    fetch = ScriptedFetch(answer(404))
    robots = make_cache(fetch, FakeClock())
    assert not await robots.allowed("ftp://site.test/x")
    assert not await robots.allowed("nonsense")
    assert fetch.calls == []


async def test_with_the_real_client_and_an_octet_stream_robots_file(serve, make_fetcher) -> None:
    async def robots_txt(request: web.Request) -> web.Response:
        return web.Response(body=b"User-agent: *\nDisallow: /secret\n", content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/robots.txt", robots_txt)
    server = await serve(app)
    fetcher = await make_fetcher()

    async def fetch(url: str) -> HttpResponse:
        return await fetcher.fetch(url, max_redirects=5, accept_all_types=True)

    robots = RobotsCache(fetch, user_agent_token="trawl", clock=FakeClock())
    assert not await robots.allowed(server.url("/secret/page"))
    assert await robots.allowed(server.url("/public"))
    assert server.paths() == ["/robots.txt"]


async def test_known_answers_from_the_cache_only_and_counts_as_one_lookup() -> None:
    clock = FakeClock()
    fetch = ScriptedFetch(answer(200, "User-agent: *\nDisallow: /a\n"))
    robots = make_cache(fetch, clock, ttl=3600.0)
    assert robots.known("http://site.test") is None and robots.stats.lookups == 0  # a miss: policy() counts it
    policy = await robots.policy("http://site.test")
    assert robots.known("http://site.test") is policy
    assert (robots.stats.lookups, robots.stats.cache_hits) == (2, 1)
    clock.advance(3600)
    assert robots.known("http://site.test") is None  # expired: fetched again by policy()
    assert len(fetch.calls) == 1
