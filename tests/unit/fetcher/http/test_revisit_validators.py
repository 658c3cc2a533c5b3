"""Conditional revisits against local servers: each way a server can treat validators, handled and counted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import REGISTRY

from libs.common.wire import messages as pb
from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http.revisit_validators import Validators, received_validators
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.worker import FetchWorker

LAST_MODIFIED = "Mon, 02 Mar 2026 10:00:00 GMT"
BODY = b"<html><body><p>the page</p></body></html>"


def events(reason: str) -> float:
    return REGISTRY.get_sample_value("trawl_fetcher_revisit_validators_total", {"reason": reason}) or 0.0


class Origin:
    """A page whose validators and conditional handling a test sets."""

    def __init__(self) -> None:
        self.etag = '"v1"'
        self.last_modified = LAST_MODIFIED
        self.honours = True
        self.always_304 = False

    def app(self) -> web.Application:
        async def page(request: web.Request) -> web.Response:
            headers = {"ETag": self.etag, "Last-Modified": self.last_modified}
            if self.always_304:
                return web.Response(status=304, headers=headers)
            if self.honours:
                match = request.headers.get("If-None-Match")
                if match is not None and match.removeprefix("W/") == self.etag.removeprefix("W/"):
                    return web.Response(status=304, headers=headers)
                since = request.headers.get("If-Modified-Since")
                if match is None and since == self.last_modified:
                    return web.Response(status=304, headers=headers)
            return web.Response(body=BODY, content_type="text/html", headers=headers)

        app = web.Application()
        app.router.add_get("/page", page)
        return app


@pytest.fixture
async def core(make_fetcher: Any) -> FetchCore:
    clock = SystemClock()
    http = await make_fetcher(clock=clock)
    politeness = HostPoliteness(clock, min_delay=0.0, max_crawl_delay=30.0, response_time_factor=0.0,
                                max_backoff=1.0, park_after_failures=5, max_wait=30.0)
    robots = RobotsCache(polite_robots_fetch(http, politeness), user_agent_token="trawl", clock=clock)
    return FetchCore(http, robots, politeness, clock)


async def test_a_capture_keeps_its_validators_and_a_revisit_of_an_unchanged_page_gets_a_304(serve, core) -> None:
    origin = Origin()
    server = await serve(origin.app())
    first = await core.fetch(server.url("/page"))
    assert first.outcome == "ok" and first.validators == Validators('"v1"', LAST_MODIFIED)
    before = events("not_modified")
    again = await core.fetch(server.url("/page"), validators=Validators('"v1"', LAST_MODIFIED, 1.0))
    assert again.outcome == "not_modified" and not again.retryable
    assert again.response is not None and again.response.status == 304 and again.response.body == b""
    assert again.validators == Validators('"v1"', LAST_MODIFIED)
    sent = server.requests[-1].headers
    assert sent["If-None-Match"] == '"v1"' and sent["If-Modified-Since"] == LAST_MODIFIED
    assert "If-None-Match" not in server.requests[-2].headers  # the first capture was unconditional
    assert events("not_modified") == before + 1


async def test_a_changed_page_is_fetched_in_full_with_its_new_validators(serve, core) -> None:
    origin = Origin()
    server = await serve(origin.app())
    origin.etag = '"v2"'
    before = events("changed")
    attempt = await core.fetch(server.url("/page"), validators=Validators('"v1"', LAST_MODIFIED))
    assert attempt.outcome == "ok" and attempt.response is not None and attempt.response.body == BODY
    assert attempt.validators == Validators('"v2"', LAST_MODIFIED)
    assert events("changed") == before + 1


async def test_a_server_that_ignores_the_headers_answers_in_full_and_is_counted(serve, core) -> None:
    origin = Origin()
    origin.honours = False
    server = await serve(origin.app())
    before = events("ignored")
    attempt = await core.fetch(server.url("/page"), validators=Validators('"v1"', LAST_MODIFIED))
    assert attempt.outcome == "ok" and attempt.response is not None and attempt.response.body == BODY
    assert events("ignored") == before + 1


async def test_a_weak_etag_is_kept_and_sent_back(serve, core) -> None:
    origin = Origin()
    origin.etag = 'W/"v1"'
    server = await serve(origin.app())
    weak = events("weak_etag")
    first = await core.fetch(server.url("/page"))
    assert first.validators is not None and first.validators.etag == 'W/"v1"'
    assert events("weak_etag") == weak + 1
    again = await core.fetch(server.url("/page"), validators=first.validators)
    assert again.outcome == "not_modified"
    assert server.requests[-1].headers["If-None-Match"] == 'W/"v1"'


async def test_a_broken_last_modified_is_neither_kept_nor_sent(serve, core) -> None:
    origin = Origin()
    origin.last_modified = "yesterday, around noon"
    server = await serve(origin.app())
    before = events("broken_last_modified")
    first = await core.fetch(server.url("/page"))
    assert first.validators == Validators('"v1"', "")
    assert events("broken_last_modified") == before + 1
    assert Validators("", "yesterday, around noon").request_headers() == {}
    assert Validators('"x"', "not a date").request_headers() == {"If-None-Match": '"x"'}


def test_a_broken_etag_is_dropped() -> None:
    before = events("broken_etag")
    broken = [("ETag", '"a\x01b"'), ("Last-Modified", LAST_MODIFIED)]
    assert received_validators(broken) == Validators("", LAST_MODIFIED)
    assert received_validators([("ETag", '"' + "x" * 600 + '"')]) == Validators()
    assert events("broken_etag") == before + 2


async def test_a_304_to_an_unconditional_request_is_an_error_tried_again(serve, core) -> None:
    origin = Origin()
    origin.always_304 = True
    server = await serve(origin.app())
    before = events("unsolicited_304")
    attempt = await core.fetch(server.url("/page"))
    assert attempt.outcome == "http_error" and attempt.retryable
    assert events("unsolicited_304") == before + 1


@pytest.fixture
async def raw_304_with_body() -> AsyncIterator[str]:
    """A server whose 304 declares and then sends a body (a later packet); any other request gets a 200."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if b"if-none-match" in head.lower():
                    writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 9\r\n\r\n')
                    await writer.drain()
                    await asyncio.sleep(0.05)
                    writer.write(b"leftover!")
                else:
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()


async def test_a_304_with_a_body_counts_as_not_modified_and_its_connection_is_dropped(raw_304_with_body, core) -> None:
    before = events("304_with_body")
    attempt = await core.fetch(raw_304_with_body + "/page", validators=Validators('"v1"'))
    assert attempt.outcome == "not_modified"
    assert events("304_with_body") == before + 1
    await asyncio.sleep(0.1)  # the body arrives: on a kept connection it would be read as the next response
    after = await core.fetch(raw_304_with_body + "/other")
    assert after.outcome == "ok" and after.response is not None and after.response.body == b"ok"


class _Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def send(self, topic: Any, key: Any, value: Any) -> None:
        self.sent.append((topic.name, value))


async def test_a_not_modified_revisit_publishes_its_outcome_and_no_fetch_result(serve, core) -> None:
    server = await serve(Origin().app())
    producer = _Producer()
    worker = FetchWorker(core, producer, SystemClock())  # type: ignore[arg-type]  # a producer's send is all used
    request = pb.FetchRequest(request_id="r1", url=server.url("/page"), host="127.0.0.1", etag='"v1"',
                              last_modified=LAST_MODIFIED, validated_at_ms=1_000)
    await worker.handle(request)
    assert [topic for topic, _ in producer.sent] == ["trawl.fetch-outcomes"]
    outcome = producer.sent[0][1]
    assert outcome.status == pb.FETCH_STATUS_NOT_MODIFIED and outcome.http_status == 304 and outcome.error == ""
    assert (outcome.etag, outcome.last_modified) == ('"v1"', LAST_MODIFIED)
    await worker.handle(pb.FetchRequest(request_id="r2", url=server.url("/page"), host="127.0.0.1"))
    assert [topic for topic, _ in producer.sent[1:]] == ["trawl.fetch-results", "trawl.fetch-outcomes"]
    assert producer.sent[2][1].status == pb.FETCH_STATUS_OK and producer.sent[2][1].etag == '"v1"'


async def test_a_304_to_a_revisit_whose_only_validator_was_broken_is_unsolicited(serve, core) -> None:
    origin = Origin()
    origin.always_304 = True
    server = await serve(origin.app())
    attempt = await core.fetch(server.url("/page"), validators=Validators("", "not a date"))
    assert attempt.outcome == "http_error" and attempt.retryable
    assert "If-Modified-Since" not in server.requests[-1].headers
