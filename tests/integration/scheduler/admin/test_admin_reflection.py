"""A generic gRPC client, like grpcurl, lists and calls the admin API through reflection alone.

No generated stub or message class of Trawl is used here: the client learns the services,
methods and message types from the server's reflection service, builds requests from plain
dicts and reads answers back as dicts, as any tool that knows nothing about Trawl would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import Message
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from libs.common.db.pool import Database
from services.scheduler.frontier.store import FrontierStore
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


class ReflectionClient:
    """Calls any unary method by its full name with a JSON-like request, types from reflection."""

    def __init__(self, channel: grpc.Channel, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self._channel = channel
        self._metadata = metadata
        self._database = ProtoReflectionDescriptorDatabase(channel)
        self._pool = descriptor_pool.DescriptorPool(self._database)

    def services(self) -> list[str]:
        return list(self._database.get_services())

    def methods(self, service: str) -> list[str]:
        return [m.name for m in self._pool.FindServiceByName(service).methods]

    def call(self, service: str, method: str, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        described = self._pool.FindServiceByName(service).methods_by_name[method]
        request_class = message_factory.GetMessageClass(described.input_type)
        response_class = message_factory.GetMessageClass(described.output_type)
        call: grpc.UnaryUnaryMultiCallable[Message, Message] = self._channel.unary_unary(
            f"/{service}/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_class.FromString,
        )
        answer = call(json_format.ParseDict(request, request_class()), timeout=timeout, metadata=self._metadata)
        return json_format.MessageToDict(answer, preserving_proto_field_name=True)


def explore(address: str) -> dict[str, Any]:
    with grpc.insecure_channel(address) as channel:
        anonymous = ReflectionClient(channel)
        services = anonymous.services()
        methods = anonymous.methods("trawl.v1.AdminService")
        try:
            anonymous.call("trawl.v1.AdminService", "GetCrawlStats", {})
            refused = None
        except grpc.RpcError as exc:
            refused = exc.code()
        client = ReflectionClient(channel, (("authorization", f"Bearer {TOKEN}"),))
        seeds = client.call("trawl.v1.AdminService", "AddSeeds",
                            {"urls": ["http://a.example/", "http://b.example/x", "mailto:x@y"]})
        policy = client.call("trawl.v1.AdminService", "SetHostPolicy",
                             {"policy": {"host": "a.example", "min_delay_seconds": 2.5, "budget": 10}})
        report = client.call("trawl.v1.AdminService", "LookupUrl", {"url": "http://a.example/"})
        stats = client.call("trawl.v1.AdminService", "GetCrawlStats", {})
        health = client.call("grpc.health.v1.Health", "Check", {"service": ""})
    return {"services": services, "methods": methods, "refused": refused, "seeds": seeds, "policy": policy,
            "report": report, "stats": stats, "health": health}


async def test_a_reflection_client_lists_and_calls_the_admin_api(
    scheduler_db: Database, frontier: FrontierStore
) -> None:
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        seen = await asyncio.to_thread(explore, address)

    assert {"trawl.v1.AdminService", "grpc.health.v1.Health"} <= set(seen["services"])
    assert {"AddSeeds", "RemoveSeeds", "AddSites", "DrainCrawl", "SetHostPolicy", "LookupUrl", "GetTopPages",
            "GetHostStats", "GetTopicStats", "SetCrawlGoal"} <= set(seen["methods"])
    assert seen["refused"] == grpc.StatusCode.UNAUTHENTICATED
    assert seen["seeds"]["accepted"] == 2
    assert seen["seeds"]["rejected"] == [{"url": "mailto:x@y", "reason": "unsupported_scheme:mailto"}]
    assert seen["policy"]["host"] == "a.example"
    assert seen["policy"]["min_delay_seconds"] == 2.5 and seen["policy"]["budget"] == "10"  # JSON: int64 as text
    assert "max_concurrency" not in seen["policy"]  # not set: absent, not 0
    assert seen["report"]["status"] == "queued" and seen["report"]["known"] is True
    assert seen["report"]["host_policy"]["min_delay_seconds"] == 2.5
    assert {c["status"]: c["count"] for c in seen["stats"]["frontier"]} == {"queued": "2"}
    assert seen["health"]["status"] == "SERVING"
