"""A generic gRPC client (grpc_requests, in a process of its own) lists and calls the admin API by reflection.

It knows nothing but the address, like grpcurl or Postman: it learns the services, methods and
types from the server's reflection, reads without a token are refused, and with the token it
adds seeds and reads them back; health answers by the standard protocol without a token.
"""

from __future__ import annotations

import json

import pytest

from libs.common.db.pool import Database
from services.scheduler.frontier.store import FrontierStore
from tests.integration.common.guarded_calls import reflection_probe
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytest.importorskip("grpc_requests")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ADMIN = "trawl.v1.AdminService"
HEALTH = "grpc.health.v1.Health/Check={}"


async def test_a_generic_client_lists_the_admin_api_and_calls_it_with_the_token(
    scheduler_db: Database, frontier: FrontierStore
) -> None:
    seeds = json.dumps({"urls": ["http://a.example/", "mailto:x@y"]})
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        anonymous = await reflection_probe(address, f"{ADMIN}/GetCrawlStats", f"{ADMIN}/AddSeeds={seeds}", HEALTH)
        allowed = await reflection_probe(
            address, f"{ADMIN}/AddSeeds={seeds}", f"{ADMIN}/GetCrawlStats",
            f"{ADMIN}/LookupUrl=" + json.dumps({"url": "http://a.example/"}), token=TOKEN)

    assert {ADMIN, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= set(anonymous["services"])
    assert {"AddSeeds", "GetCrawlStats", "LookupUrl", "SetHostPolicy", "GetTopPages"} <= set(
        anonymous["services"][ADMIN])
    refused, refused_write, health = anonymous["calls"]
    assert refused["code"] == refused_write["code"] == "UNAUTHENTICATED"
    assert health == {"call": "grpc.health.v1.Health/Check", "code": "OK", "response": {"status": "SERVING"}}
    added, stats, report = allowed["calls"]
    assert added["code"] == "OK" and added["response"]["accepted"] == 1
    assert stats["code"] == "OK" and {c["status"]: c["count"] for c in stats["response"]["frontier"]} == {
        "queued": "1"}
    assert report["code"] == "OK" and report["response"]["status"] == "queued"
    assert await frontier.status_counts() == {"queued": 1}  # the refused AddSeeds added nothing
