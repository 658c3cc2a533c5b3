"""GrpcServer over real gRPC: the standard health service, reflection, the token guard, serving state and stop."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from libs.common.grpc_auth import BearerTokenInterceptor, bearer_metadata
from libs.common.grpc_server import GrpcServer
from libs.common.wire import admin, admin_grpc

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

ADMIN = admin.DESCRIPTOR.services_by_name["AdminService"].full_name
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _register_admin(server: grpc.aio.Server) -> None:
    # The generated base class answers every call with UNIMPLEMENTED, all these tests need; its stub marks
    # each method abstract.
    admin_grpc.add_AdminServiceServicer_to_server(admin_grpc.AdminServiceServicer(), server)  # type: ignore[abstract]


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    grpc_server = GrpcServer("127.0.0.1:0", service_names=[ADMIN], registrars=[_register_admin])
    await grpc_server.start()
    try:
        yield grpc_server
    finally:
        await grpc_server.stop(grace=0.5)


async def _status(port: int, service: str = "") -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        response = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
    return int(response.status)


async def test_start_binds_a_port_and_health_answers_serving(server: GrpcServer) -> None:
    assert server.port > 0
    assert await _status(server.port) == SERVING
    assert await _status(server.port, ADMIN) == SERVING


async def test_an_unknown_service_is_not_found(server: GrpcServer) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _status(server.port, "trawl.v1.NoSuchService")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_reflection_lists_the_services(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                         timeout=5)
        responses = [response async for response in call]
    names = {s.name for s in responses[0].list_services_response.service}
    assert names == {ADMIN, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}


async def test_registered_services_are_reachable_with_the_token() -> None:
    guarded = GrpcServer("127.0.0.1:0", service_names=[ADMIN], registrars=[_register_admin],
                         interceptors=[BearerTokenInterceptor(("t",))])
    port = await guarded.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await admin_grpc.AdminServiceStub(channel).GetCrawlStats(
                    admin.GetCrawlStatsRequest(), timeout=5, metadata=bearer_metadata("t"))
    finally:
        await guarded.stop(grace=0.5)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED  # the base servicer answered


async def test_a_server_handed_no_token_refuses_all_but_health_and_reflection(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for metadata in (None, bearer_metadata(""), bearer_metadata("anything")):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await admin_grpc.AdminServiceStub(channel).GetCrawlStats(
                    admin.GetCrawlStatsRequest(), timeout=5, metadata=metadata)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert await _status(server.port) == SERVING


async def test_set_serving_false_then_true(server: GrpcServer) -> None:
    await server.set_serving(False)
    assert await _status(server.port) == NOT_SERVING
    assert await _status(server.port, ADMIN) == NOT_SERVING
    await server.set_serving(True)
    assert await _status(server.port) == SERVING


async def test_stop_closes_the_port_and_is_idempotent() -> None:
    grpc_server = GrpcServer("127.0.0.1:0")
    port = await grpc_server.start()
    assert await _status(port) == SERVING
    await grpc_server.stop(grace=0.5)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _status(port)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    await grpc_server.stop()  # a second stop does nothing


async def test_stop_before_start_does_nothing() -> None:
    await GrpcServer("127.0.0.1:0").stop()


async def test_a_taken_port_is_refused_not_shared(server: GrpcServer) -> None:
    second = GrpcServer(f"127.0.0.1:{server.port}")
    try:
        with pytest.raises(OSError, match=str(server.port)):
            await second.start()
    finally:
        await second.stop(grace=0)
    assert await _status(server.port) == SERVING
