"""grpc_server_from, the factory every service's gRPC server comes from: the token and TLS from the settings."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from libs.common.grpc_auth import bearer_metadata
from libs.common.grpc_server import grpc_server_from
from libs.common.settings import SettingsError
from libs.common.wire import admin, admin_grpc

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

ADMIN = admin.DESCRIPTOR.services_by_name["AdminService"].full_name


def _register_admin(server: grpc.aio.Server) -> None:
    # The generated base class answers every call with UNIMPLEMENTED, all these tests need; its stub marks
    # each method abstract.
    admin_grpc.add_AdminServiceServicer_to_server(admin_grpc.AdminServiceServicer(), server)  # type: ignore[abstract]


async def _stats_code(port: int, metadata: tuple[tuple[str, str], ...] | None) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            await admin_grpc.AdminServiceStub(channel).GetCrawlStats(
                admin.GetCrawlStatsRequest(), timeout=5, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize("source", ["env", "file"])
async def test_the_token_of_the_settings_guards_every_registered_method(tmp_path: Path, source: str) -> None:
    (tmp_path / "token").write_text("env-token\n")
    env = {"TRAWL_ADMIN_TOKEN": "env-token"} if source == "env" else {"TRAWL_ADMIN_TOKEN_FILE": str(tmp_path / "token")}
    server = grpc_server_from(env, "127.0.0.1:0", service_names=[ADMIN], registrars=[_register_admin])
    port = await server.start()
    try:
        assert await _stats_code(port, None) == grpc.StatusCode.UNAUTHENTICATED
        assert await _stats_code(port, bearer_metadata("other")) == grpc.StatusCode.UNAUTHENTICATED
        assert await _stats_code(port, bearer_metadata("env-token")) == grpc.StatusCode.UNIMPLEMENTED  # let through
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(grace=0.5)


def test_half_a_tls_setting_stops_the_service_at_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="TRAWL_GRPC_TLS_KEY_FILE"):
        grpc_server_from({"TRAWL_GRPC_TLS_CERT_FILE": str(tmp_path / "cert.pem")}, "127.0.0.1:0")


def test_an_unreadable_token_file_stops_the_service_at_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="TRAWL_ADMIN_TOKEN_FILE"):
        grpc_server_from({"TRAWL_ADMIN_TOKEN_FILE": str(tmp_path / "missing")}, "127.0.0.1:0")
