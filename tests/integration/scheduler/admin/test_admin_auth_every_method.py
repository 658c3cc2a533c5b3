"""Every method of the admin API, listed from its descriptor, is refused without a valid token.

Real gRPC on loopback, the API served as the scheduler serves it. The reads (a URL's report,
top pages, statistics) expose the crawl's data and the writes change it, so none is open;
with the token every call passes the guard (what each then answers is tested in
``test_admin_api.py`` and the other ``test_admin_*`` modules).
"""

from __future__ import annotations

import grpc
import pytest

from libs.common.db.pool import Database
from libs.common.grpc_auth import bearer_metadata
from libs.common.wire import admin as admin_pb
from services.scheduler.frontier.store import FrontierStore
from tests.integration.common.guarded_calls import NOT_AUTHENTICATED, call, empty_request, methods
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ADMIN = admin_pb.DESCRIPTOR.services_by_name["AdminService"]


async def test_every_admin_method_needs_the_token(scheduler_db: Database, frontier: FrontierStore) -> None:
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        async with grpc.aio.insecure_channel(address) as channel:
            for name, method in methods(ADMIN).items():
                for why, metadata in NOT_AUTHENTICATED.items():
                    code, details = await call(channel, method, empty_request(method), metadata)
                    assert code == grpc.StatusCode.UNAUTHENTICATED, (name, why, code, details)
            assert await frontier.status_counts() == {}
            assert not (await _paused(channel))
            for name, method in methods(ADMIN).items():
                code, details = await call(channel, method, empty_request(method), bearer_metadata(TOKEN))
                assert code != grpc.StatusCode.UNAUTHENTICATED, (name, details)


async def _paused(channel: grpc.aio.Channel) -> bool:
    method = methods(ADMIN)["GetCrawlStats"]
    code, stats = await call(channel, method, empty_request(method), bearer_metadata(TOKEN))
    assert code == grpc.StatusCode.OK
    return bool(stats.paused)
