"""Politeness per IP address (an option): hosts sharing a server share one gap."""

from __future__ import annotations

import asyncio

from aiohttp import web

from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.politeness.politeness_keys import PolitenessKeys
from services.fetcher.robots.robots import RobotsCache

GAP = 0.3


async def crawl_two_hosts(serve, make_fetcher, by_ip: bool) -> list[tuple[str, float]]:
    seen: list[tuple[str, float]] = []
    loop = asyncio.get_running_loop()

    async def page(request: web.Request) -> web.Response:
        seen.append((request.host.split(":")[0], loop.time()))
        return web.Response(text="<p>x</p>", content_type="text/html")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/p", page)
    server = await serve(app)
    clock = SystemClock()
    http = await make_fetcher(clock=clock, host_map={"a.test": "127.0.0.1", "b.test": "127.0.0.1"})
    keys = PolitenessKeys(http.resolve_address if by_ip else None)
    politeness = HostPoliteness(clock, min_delay=GAP, max_crawl_delay=1, response_time_factor=0,
                                max_backoff=1, park_after_failures=3)
    robots_cache = RobotsCache(polite_robots_fetch(http, politeness, keys), user_agent_token="trawl", clock=clock)
    core = FetchCore(http, robots_cache, politeness, clock, keys)
    for host in ("a.test", "b.test"):  # robots.txt first, so that only the pages race below
        await robots_cache.policy(f"http://{host}:{server.port}")
    await asyncio.sleep(GAP)
    attempts = await asyncio.gather(*(core.fetch(f"http://{h}:{server.port}/p") for h in ("a.test", "b.test")))
    assert [a.outcome for a in attempts] == ["ok", "ok"]
    return seen


async def test_hosts_on_one_address_share_one_gap_when_keyed_by_ip(serve, make_fetcher) -> None:
    seen = await crawl_two_hosts(serve, make_fetcher, by_ip=True)
    assert sorted(h for h, _ in seen) == ["a.test", "b.test"]
    assert seen[1][1] - seen[0][1] >= GAP


async def test_a_name_that_does_not_resolve_is_keyed_by_name() -> None:
    async def lookup(host: str) -> str | None:
        return {"a.test": "10.0.0.1", "b.test": "10.0.0.1"}.get(host)

    keys = PolitenessKeys(lookup)
    assert await keys.key("A.test") == "ip:10.0.0.1"
    assert await keys.key("b.test") == "ip:10.0.0.1"
    assert await keys.key("c.test") == "c.test"
    assert keys.known_key("a.test") == "ip:10.0.0.1" and keys.known_key("d.test") == "d.test"
