"""The admin API refuses calls without a valid bearer token; health and reflection stay open; TLS works."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from cli.admin_client import AdminClient
from libs.common.db.pool import Database
from libs.common.grpc_auth import AdminAuthSettings, bearer_metadata, load_tokens, token_of, token_valid
from libs.common.grpc_server import GrpcTlsSettings, server_credentials
from libs.common.settings import SettingsError
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from services.scheduler.frontier.store import FrontierStore
from tests.integration.scheduler.admin.test_admin_api import TOKEN, serve_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def add_seed(address: str, metadata: tuple[tuple[str, str], ...] | None) -> grpc.StatusCode:
    """Calls AddSeeds with a generated stub and ``metadata``; the status it ended with."""
    with grpc.insecure_channel(address) as channel:
        try:
            admin_grpc.AdminServiceStub(channel).AddSeeds(
                admin_pb.AddSeedsRequest(urls=["http://a.example/"]), timeout=10.0, metadata=metadata
            )
        except grpc.RpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        (("authorization", "Bearer wrong-token"),),
        (("authorization", f"Basic {TOKEN}"),),
        (("authorization", "Bearer "),),
        (("x-token", TOKEN),),
    ],
    ids=["no-token", "wrong-token", "wrong-scheme", "empty-token", "other-header"],
)
async def test_a_call_without_a_valid_token_is_refused_and_changes_nothing(
    scheduler_db: Database, frontier: FrontierStore, metadata: tuple[tuple[str, str], ...] | None
) -> None:
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        assert await asyncio.to_thread(add_seed, address, metadata) == grpc.StatusCode.UNAUTHENTICATED
        assert await frontier.status_counts() == {}
        assert await asyncio.to_thread(add_seed, address, bearer_metadata(TOKEN)) == grpc.StatusCode.OK
        assert await frontier.status_counts() == {"queued": 1}


async def test_the_clients_refused_call_names_the_reason(scheduler_db: Database, frontier: FrontierStore) -> None:
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        with AdminClient(address) as client, pytest.raises(grpc.RpcError) as raised:
            await asyncio.to_thread(client.stats)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert raised.value.details() == "missing bearer token"


async def test_a_server_without_a_token_refuses_every_admin_call(
    scheduler_db: Database, frontier: FrontierStore
) -> None:
    async with serve_admin(scheduler_db, frontier, tokens=()) as (address, _state):
        assert await asyncio.to_thread(add_seed, address, bearer_metadata("")) == grpc.StatusCode.UNAUTHENTICATED
        assert await asyncio.to_thread(add_seed, address, bearer_metadata("x")) == grpc.StatusCode.UNAUTHENTICATED


async def test_every_token_of_a_rotation_is_accepted(
    scheduler_db: Database, frontier: FrontierStore, tmp_path: Path
) -> None:
    token_file = tmp_path / "tokens"
    token_file.write_text("new-token\n\n  old-token  \n")
    tokens = load_tokens(AdminAuthSettings(token="env-token", token_file=str(token_file)))
    assert tokens == ("env-token", "new-token", "old-token")
    async with serve_admin(scheduler_db, frontier, tokens=tokens) as (address, _state):
        for token in tokens:
            assert await asyncio.to_thread(add_seed, address, bearer_metadata(token)) == grpc.StatusCode.OK
        assert await asyncio.to_thread(add_seed, address, bearer_metadata("new")) == grpc.StatusCode.UNAUTHENTICATED


async def test_health_and_reflection_answer_without_a_token(scheduler_db: Database, frontier: FrontierStore) -> None:
    def probe(address: str) -> tuple[int, list[str]]:
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="trawl.v1.AdminService"), timeout=5.0
            )
            answers = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5.0
            )
            names = [s.name for answer in answers for s in answer.list_services_response.service]
        return health.status, names

    async with serve_admin(scheduler_db, frontier) as (address, _state):
        status, names = await asyncio.to_thread(probe, address)
    assert status == health_pb2.HealthCheckResponse.SERVING
    assert "trawl.v1.AdminService" in names and "grpc.health.v1.Health" in names


async def test_no_token_is_logged(
    scheduler_db: Database, frontier: FrontierStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_admin(scheduler_db, frontier) as (address, _state):
        await asyncio.to_thread(add_seed, address, bearer_metadata("a-secret-guess"))
        await asyncio.to_thread(add_seed, address, bearer_metadata(TOKEN))
    assert "refused /trawl.v1.AdminService/AddSeeds: invalid bearer token" in caplog.text
    assert "a-secret-guess" not in caplog.text and TOKEN not in caplog.text


def test_tokens_are_read_from_metadata_and_compared_whole() -> None:
    assert token_of([("authorization", "Bearer abc")]) == "abc"
    assert token_of([("Authorization", b"bearer  abc ")]) == "abc"
    assert token_of([("authorization", "Basic abc")]) is None
    assert token_of(None) is None
    assert token_valid("abc", ["x", "abc"])
    assert not token_valid("ab", ["abc"]) and not token_valid("abcd", ["abc"]) and not token_valid(None, ["abc"])
    assert not token_valid("", [])


def test_an_unreadable_token_file_and_half_a_tls_pair_stop_the_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="TRAWL_ADMIN_TOKEN_FILE"):
        load_tokens(AdminAuthSettings(token_file=str(tmp_path / "missing")))
    with pytest.raises(SettingsError, match="both"):
        server_credentials(GrpcTlsSettings(cert_file=str(tmp_path / "cert.pem")))
    with pytest.raises(SettingsError, match="cannot read"):
        server_credentials(GrpcTlsSettings(cert_file=str(tmp_path / "c"), key_file=str(tmp_path / "k")))
    assert server_credentials(GrpcTlsSettings()) is None


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1 and its key, made by the openssl command."""
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command is needed to make a test certificate"
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


async def test_over_tls_the_token_is_still_needed_and_plaintext_is_refused(
    scheduler_db: Database, frontier: FrontierStore, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    credentials = server_credentials(GrpcTlsSettings(cert_file=str(cert), key_file=str(key)))
    async with serve_admin(scheduler_db, frontier, credentials=credentials) as (address, _state):
        with AdminClient(address, token=TOKEN, tls=True, ca_file=str(cert)) as client:
            reply = await asyncio.to_thread(client.add_seeds, ["http://a.example/"])
        assert reply["accepted"] == 1
        with AdminClient(address, tls=True, ca_file=str(cert)) as client, pytest.raises(grpc.RpcError) as refused:
            await asyncio.to_thread(client.stats)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with AdminClient(address, 3.0, token=TOKEN) as client, pytest.raises(grpc.RpcError) as plaintext:
            await asyncio.to_thread(client.stats)
        assert plaintext.value.code() == grpc.StatusCode.UNAVAILABLE
