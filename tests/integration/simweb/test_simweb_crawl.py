"""A minimal polite crawler against the server must fetch exactly what the ground truth says is reachable.

This ties the served bytes (robots.txt, HTML links, meta robots, statuses) to
``SimWeb.reachable`` and ``log_checks.robots_violations``: if either drifted from
what the server sends, the sets would differ.
"""

from __future__ import annotations

import asyncio
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import aiohttp

from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb.log_checks import robots_violations
from services.fetcher.robots.robots_rules import RobotsRules


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.nofollow = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.hrefs.append(values["href"] or "")
        if tag == "meta" and values.get("name") == "robots" and "nofollow" in (values.get("content") or ""):
            self.nofollow = True


async def _crawl(seeds: list[str], proxy: str) -> set[str]:
    robots: dict[str, RobotsRules | None] = {}
    fetched: set[str] = set()
    seen = set(seeds)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in seeds:
        queue.put_nowait(url)
    async with aiohttp.ClientSession(headers={"User-Agent": "trawl/0.1"}) as session:

        async def allowed(url: str) -> bool:
            host = urlsplit(url).hostname or ""
            if host not in robots:
                async with session.get(f"http://{host}/robots.txt", proxy=proxy) as response:
                    body = await response.read()
                    # RFC 9309: 4xx allows everything, 5xx disallows everything
                    robots[host] = RobotsRules.parse(body, "trawl") if response.status == 200 else None
                    if response.status >= 500:
                        robots[host] = RobotsRules.parse(b"User-agent: *\nDisallow: /", "trawl")
            parser = robots[host]
            return parser is None or parser.allowed(url)

        async def worker() -> None:
            while True:
                url = await queue.get()
                try:
                    if not await allowed(url):
                        continue
                    async with session.get(url, proxy=proxy) as response:
                        if response.status != 200:
                            continue
                        fetched.add(url)
                        page = _Page()
                        page.feed(await response.text())
                    if page.nofollow:
                        continue
                    for href in page.hrefs:
                        try:
                            target = urljoin(url, href)
                            scheme = urlsplit(target).scheme
                        except ValueError:
                            continue
                        if scheme == "http" and target not in seen:
                            seen.add(target)
                            queue.put_nowait(target)
                finally:
                    queue.task_done()

        workers = [asyncio.create_task(worker()) for _ in range(16)]
        await queue.join()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return fetched


async def test_a_polite_crawl_fetches_exactly_the_reachable_set() -> None:
    web = build_web(SimWebConfig(seed=13, hosts=15, pages=250, hub_host_ratio=0.1, hub_rate_per_hour=0.2))
    server = SimWebServer(web, SimClock.frozen(web.start_time))
    await server.start()
    try:
        fetched = await _crawl(web.home_pages(), server.url)
        log = server.request_log
    finally:
        await server.stop()
    assert fetched == web.reachable(web.home_pages())
    assert robots_violations(log, web) == []
    assert len(fetched) > 200
    private_links = {
        link.target_url for p in web.pages.values() for link in p.links if "/private/" in link.target_url
    }
    assert private_links and not private_links & fetched
