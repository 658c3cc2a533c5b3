"""The simulated web's validators on 127.0.0.1: ETag and Last-Modified everywhere, 304s on the hosts that
honour them, page edits over time, bytes in the request log, and the served process's clock moved on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from multidict import CIMultiDict

from libs.simweb import SimClock, SimWeb, SimWebConfig, SimWebServer, build_web
from libs.simweb.process import SimWebProcess
from libs.simweb.render import http_time

CONFIG = SimWebConfig(seed=8, hosts=20, pages=300, hub_host_ratio=0.0, conditional_hosts_ratio=0.5,
                      page_edit_ratio=0.2)


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(CONFIG)


@pytest.fixture
async def server(web: SimWeb) -> AsyncIterator[SimWebServer]:
    running = SimWebServer(web, SimClock.frozen(web.start_time))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def _get(url: str, proxy: str, **headers: str) -> tuple[int, CIMultiDict[str]]:
    async with aiohttp.ClientSession() as session, session.get(url, proxy=proxy, headers=headers) as response:
        await response.read()
        return response.status, CIMultiDict(response.headers)


def test_edits_change_a_share_of_the_pages_each_round(web: SimWeb) -> None:
    pages = [p.url for p in web.pages_at().values() if p.role == "page"]
    start, day = web.start_time, CONFIG.page_edit_interval
    assert all(web.revision(url, start) == 0 for url in pages)
    edited = [url for url in pages if web.revision(url, start + day) == 1]
    assert 0.12 < len(edited) / len(pages) < 0.28
    url = edited[0]
    assert web.html(url, start + day) != web.html(url, start)
    assert web.etag(url, start + day) != web.etag(url, start)
    assert web.last_modified(url, start + day) == start + day
    untouched = next(u for u in pages if web.revision(u, start + day) == 0)
    assert web.etag(untouched, start + day) == web.etag(untouched, start)
    honouring = [h for h in web.hosts if web.honours_validators(h)]
    assert 0 < len(honouring) < len(web.hosts)


async def test_hosts_that_honour_validators_answer_304_and_the_others_in_full(web: SimWeb,
                                                                               server: SimWebServer) -> None:
    pages = [p for p in web.pages_at().values() if p.role == "page"]
    honouring = next(p for p in pages if web.honours_validators(p.host))
    ignoring = next(p for p in pages if not web.honours_validators(p.host))
    for page, conditional_status in ((honouring, 304), (ignoring, 200)):
        status, headers = await _get(page.url, server.url)
        assert status == 200 and headers["ETag"] == web.etag(page.url)
        assert headers["Last-Modified"] == http_time(page.published_at)
        assert (await _get(page.url, server.url, **{"If-None-Match": headers["ETag"]}))[0] == conditional_status
        weak = "W/" + headers["ETag"]
        assert (await _get(page.url, server.url, **{"If-None-Match": weak}))[0] == conditional_status
        assert (await _get(page.url, server.url, **{"If-None-Match": '"other"',
                                                   "If-Modified-Since": headers["Last-Modified"]}))[0] == 200
    sizes = {(r.status, r.bytes_sent) for r in server.request_log}
    assert all(size > 1000 for status, size in sizes if status == 200)
    assert {status for status, _ in sizes} == {200, 304}
    assert all(0 < size < 400 for status, size in sizes if status == 304)  # a 304 is its headers


async def test_the_served_process_moves_its_clock_on_for_the_next_edits(web: SimWeb, tmp_path: Path) -> None:
    process = SimWebProcess(CONFIG, tmp_path / "log.jsonl")
    process.start()
    try:
        page = next(p for p in web.pages_at().values()
                    if p.role == "page" and web.revision(p.url, web.start_time + CONFIG.page_edit_interval) == 1
                    and web.honours_validators(p.host))
        status, headers = await _get(page.url, process.url)
        assert status == 200
        assert (await _get(page.url, process.url, **{"If-None-Match": headers["ETag"]}))[0] == 304
        assert process.advance() == (web.start_time + timedelta(days=1)).isoformat()
        status, after = await _get(page.url, process.url, **{"If-None-Match": headers["ETag"]})
        assert status == 200 and after["ETag"] != headers["ETag"]
    finally:
        process.stop()
