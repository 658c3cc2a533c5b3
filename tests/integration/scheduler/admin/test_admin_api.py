"""The scheduler's admin gRPC API, served on loopback and called with the CLI's client.

:func:`serve_admin` serves the API as the scheduler does (token interceptor, health and
reflection); the other ``test_admin_*`` modules use it too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
import pytest

from cli.admin_client import AdminClient
from libs.common.db.pool import Database
from libs.common.grpc_auth import BearerTokenInterceptor, bearer_metadata
from libs.common.grpc_server import GrpcServer
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from services.scheduler.admin.api import MAX_SEEDS_PER_CALL, SERVICE_NAME, AdminApi, AdminState, TopicStats, registrar
from services.scheduler.admin.pause import PauseFlag
from services.scheduler.admin.seed_announcer import SeedAnnouncer
from services.scheduler.frontier.store import FrontierStore, Outcome
from services.scheduler.settings import SchedulerSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
TOKEN = "test-admin-token"


@asynccontextmanager
async def serve_admin(
    db: Database,
    frontier: FrontierStore,
    on_change: Callable[[], None] = lambda: None,
    *,
    tokens: tuple[str, ...] = (TOKEN,),
    settings: SchedulerSettings | None = None,
    topic_stats: TopicStats | None = None,
    credentials: grpc.ServerCredentials | None = None,
    seeds: SeedAnnouncer | None = None,
) -> AsyncIterator[tuple[str, AdminState]]:
    """The admin API on a loopback port, guarded by ``tokens``: (its address, its stores)."""
    state = AdminState.on(db, frontier, settings or SchedulerSettings(), FETCH_REQUESTS.partitions)
    api = AdminApi(db, state, on_change, topic_stats, seeds=seeds)
    server = GrpcServer("127.0.0.1:0", service_names=[SERVICE_NAME], registrars=[registrar(api)],
                        interceptors=[BearerTokenInterceptor(tokens)], credentials=credentials)
    port = await server.start()
    try:
        yield f"127.0.0.1:{port}", state
    finally:
        await server.stop(grace=1.0)


@dataclass
class Admin:
    """The API's address, a client of it, and the calls the API made to wake the dispatcher."""

    address: str
    client: AdminClient
    wake_calls: list[None] = field(default_factory=list)

    @property
    def wakes(self) -> int:
        return len(self.wake_calls)


@pytest.fixture
async def admin(scheduler_db: Database, frontier: FrontierStore) -> AsyncIterator[Admin]:
    wake_calls: list[None] = []
    async with serve_admin(scheduler_db, frontier, lambda: wake_calls.append(None)) as (address, _state):
        with AdminClient(address, token=TOKEN) as client:
            yield Admin(address, client, wake_calls)


async def test_add_seeds_normalises_and_rejects_with_reasons(admin: Admin, frontier: FrontierStore) -> None:
    reply = await asyncio.to_thread(
        admin.client.add_seeds,
        [
            "HTTP://Example.COM:80/a/../b?utm_source=mail&fbclid=x#frag",
            " https://b.example/ ",
            "javascript:x",
            "not a url",
            "ftp://x",
            "http://example.com/b",  # the first one, once normalised
        ],
    )

    assert reply["accepted"] == 2
    assert reply["already_known"] == 0
    assert reply["rejected"] == [
        {"url": "javascript:x", "reason": "unsupported_scheme:javascript"},
        {"url": "not a url", "reason": "no_scheme"},
        {"url": "ftp://x", "reason": "unsupported_scheme:ftp"},
    ]
    assert admin.wakes == 1
    assert await frontier.status_counts() == {"queued": 2}
    sent = {d.url: d for d in await frontier.dispatch(10, list(range(12)))}
    assert set(sent) == {"http://example.com/b", "https://b.example/"}
    assert sent["http://example.com/b"].url_fp == url_fingerprint("http://example.com/b")
    assert sent["http://example.com/b"].depth == 0


async def test_add_seeds_reports_already_known(admin: Admin) -> None:
    first = await asyncio.to_thread(admin.client.add_seeds, ["http://a.example/", "http://b.example/"])
    again = await asyncio.to_thread(admin.client.add_seeds, ["http://a.example/", "http://c.example/", "http://A.example"])

    assert (first["accepted"], first["already_known"]) == (2, 0)
    assert (again["accepted"], again["already_known"], again["rejected"]) == (1, 1, [])
    nothing = await asyncio.to_thread(admin.client.add_seeds, [])
    assert (nothing["accepted"], nothing["already_known"], nothing["rejected"]) == (0, 0, [])


async def test_too_many_seeds_in_one_call_is_an_invalid_argument(admin: Admin) -> None:
    def call() -> None:
        with grpc.insecure_channel(admin.address) as channel:
            admin_grpc.AdminServiceStub(channel).AddSeeds(
                admin_pb.AddSeedsRequest(urls=["x"] * (MAX_SEEDS_PER_CALL + 1)), timeout=10.0,
                metadata=bearer_metadata(TOKEN),
            )

    with pytest.raises(grpc.RpcError) as raised:
        await asyncio.to_thread(call)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_pause_and_resume(admin: Admin, scheduler_db: Database) -> None:
    flag = PauseFlag(scheduler_db)
    assert not (await asyncio.to_thread(admin.client.stats))["paused"]

    assert await asyncio.to_thread(admin.client.pause, True) is True
    assert await flag.is_paused()
    assert (await asyncio.to_thread(admin.client.stats))["paused"]

    assert await asyncio.to_thread(admin.client.pause, False) is False
    assert not await flag.is_paused()
    assert not (await asyncio.to_thread(admin.client.stats))["paused"]
    assert admin.wakes == 1  # resuming wakes the dispatcher


async def test_crawl_stats_count_the_frontier(admin: Admin, frontier: FrontierStore) -> None:
    empty = await asyncio.to_thread(admin.client.stats)
    assert empty == {
        "paused": False, "frontier": {}, "in_flight": 0, "hosts": 0, "fetched": 0, "failed": 0,
        "robots_blocked": 0, "queued_ready": 0,
    }

    seeds = ["http://a.example/", "http://a.example/2", "http://b.example/", "http://c.example/", "http://d.example/"]
    await asyncio.to_thread(admin.client.add_seeds, seeds)
    sent = {d.host: d for d in await frontier.dispatch(10, list(range(12)))}
    assert set(sent) == {"a.example", "b.example", "c.example", "d.example"}

    def done(host: str, status: str) -> Outcome:
        d = sent[host]
        return Outcome(d.url_fp, d.request_id, host, status, 200, "test", "", datetime.now(UTC), None)

    await frontier.apply_outcomes(
        [done("b.example", "fetched"), done("c.example", "failed"), done("d.example", "blocked")], 3, 10.0
    )

    stats = await asyncio.to_thread(admin.client.stats)
    assert stats == {
        "paused": False,
        "frontier": {"queued": 1, "in_flight": 1, "fetched": 1, "failed": 1, "blocked": 1},
        "in_flight": 1,
        "hosts": 4,
        "fetched": 1,
        "failed": 1,
        "robots_blocked": 1,
        "queued_ready": 1,
    }
