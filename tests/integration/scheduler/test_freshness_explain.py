"""The admin API's ExplainUrl over gRPC: importance, model, predicted rate, next fetch time and why."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import timedelta

import grpc
import pytest

from libs.common.grpc_auth import BearerTokenInterceptor, bearer_metadata
from libs.common.grpc_server import GrpcServer
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from services.scheduler.admin.api import SERVICE_NAME, AdminApi, AdminState, registrar
from services.scheduler.freshness.explain import FreshnessExplainer
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.settings import SchedulerSettings
from tests.integration.scheduler.test_freshness_revisits import (
    HUB,
    RATE,
    SETTINGS,
    T0,
    Frontier,
    new,
    with_hub_model,
)
from tests.integration.scheduler.test_freshness_revisits import frontier as frontier  # a fixture, re-exported

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
TOKEN = "explain-token"


@pytest.fixture
async def stub(frontier: Frontier) -> AsyncIterator[admin_grpc.AdminServiceAsyncStub]:
    f = frontier
    state = AdminState.on(f.db, f.store, SchedulerSettings(), FETCH_REQUESTS.partitions)
    explainer = FreshnessExplainer(f.db, f.registry, f.clock, PriorityWeights(), SETTINGS.burst_half_life)
    api = AdminApi(f.db, state, lambda: None, explain=explainer.explain)
    server = GrpcServer("127.0.0.1:0", service_names=[SERVICE_NAME], registrars=[registrar(api)],
                        interceptors=[BearerTokenInterceptor((TOKEN,))])
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield admin_grpc.AdminServiceStub(channel)
    finally:
        await server.stop(grace=1.0)


async def explain(stub: admin_grpc.AdminServiceAsyncStub, url: str) -> admin_pb.UrlExplanation:
    reply: admin_pb.UrlExplanation = await stub.ExplainUrl(admin_pb.ExplainUrlRequest(url=url),
                                                           metadata=bearer_metadata(TOKEN))
    return reply


async def test_a_hub_is_explained_by_its_model(stub: admin_grpc.AdminServiceAsyncStub, frontier: Frontier) -> None:
    f = frontier
    target = await with_hub_model(f)
    await f.store.add_urls([new(HUB)])
    await f.fetch(expected=1)
    reply = await explain(stub, "HTTP://News.test/news/")
    interval = math.sqrt(2 * target / (RATE / 3600))
    assert reply.url == HUB and reply.known and reply.status == "fetched" and reply.hub
    assert reply.policy == "learned" and reply.key == reply.model_key == "news.test/news"
    assert reply.model_share == 1.0 and reply.model_samples == 4000 and len(reply.model_rates_per_hour) == 168
    assert reply.predicted_rate_per_hour == pytest.approx(RATE)
    assert reply.next_fetch_at_ms == int((T0 + timedelta(seconds=interval)).timestamp() * 1000)
    assert reply.last_fetch_at_ms == int(T0.timestamp() * 1000) and reply.clock_now_ms == reply.last_fetch_at_ms
    assert reply.waiting_target == target and "item-seconds" in reply.reason
    assert reply.priority == pytest.approx(reply.cash * reply.change_probability + reply.freshness_gain)
    assert reply.importance_weight == 1.0 and reply.freshness_weight == 1.0


async def test_a_page_never_fetched_and_an_unknown_one(
    stub: admin_grpc.AdminServiceAsyncStub, frontier: Frontier
) -> None:
    await frontier.store.add_urls([new("http://plain.test/x.html")])
    queued = await explain(stub, "http://plain.test/x.html")
    assert queued.known and queued.status == "queued" and not queued.policy and "importance" in queued.reason
    assert queued.next_fetch_at_ms == int(T0.timestamp() * 1000)
    unknown = await explain(stub, "http://nowhere.test/")
    assert not unknown.known and unknown.key == "nowhere.test"
    await frontier.fetch(expected=1)
    fetched = await explain(stub, "http://plain.test/x.html")
    assert fetched.policy == "page" and not fetched.hub and "first revisit" in fetched.reason
    assert url_fingerprint(fetched.url) == url_fingerprint("http://plain.test/x.html")


async def test_a_bad_url_is_refused(stub: admin_grpc.AdminServiceAsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await explain(stub, "javascript:alert(1)")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
