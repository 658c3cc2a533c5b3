"""The link base's gRPC API over real gRPC on loopback: every method needs the admin token.

Served as the service's ``main`` serves it (:func:`grpc_server_from`, the token from the
settings), on the real database. Without a valid token every method, the write (``AddSites``)
and the reads of crawl data alike, answers UNAUTHENTICATED and changes nothing; with it each
one works; health and reflection answer without a token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from libs.common.db.pool import Database
from libs.common.grpc_auth import bearer_metadata
from libs.common.grpc_server import grpc_server_from
from libs.common.wire import linkbase as lb_pb
from services.linkbase.api import SERVICE_NAME, LinkbaseApi, registrar
from services.linkbase.graph import GraphReader
from services.linkbase.history_reader import HistoryReader
from services.linkbase.sites import SiteBook
from tests.integration.common.guarded_calls import NOT_AUTHENTICATED, Metadata, call, methods, reflection_probe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOKEN = "test-linkbase-token"
LINKBASE = lb_pb.DESCRIPTOR.services_by_name["LinkbaseService"]

# One request per method, each of which succeeds once AddSites has added a.test.
REQUESTS: dict[str, Message] = {
    "AddSites": lb_pb.AddSitesRequest(sites=[lb_pb.Site(name="Site A", start_url="http://a.test/")]),
    "GetUrl": lb_pb.GetUrlRequest(url="http://a.test/"),
    "GetInLinks": lb_pb.GetLinksRequest(url="http://a.test/"),
    "GetOutLinks": lb_pb.GetLinksRequest(url="http://a.test/"),
    "GetUrlHistory": lb_pb.GetUrlHistoryRequest(url="http://a.test/"),
    "GetHost": lb_pb.GetHostRequest(host="a.test"),
    "GetExternalLinks": lb_pb.GetExternalLinksRequest(site="a.test"),
}


@asynccontextmanager
async def serve_linkbase_address(db: Database, env: Mapping[str, str]) -> AsyncIterator[str]:
    """The link base's API on a loopback port, configured by ``env`` as ``main`` configures it: its address."""
    api = LinkbaseApi(GraphReader(db), HistoryReader(db), SiteBook(db))
    server = grpc_server_from(env, "127.0.0.1:0", service_names=[SERVICE_NAME], registrars=[registrar(api)])
    port = await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=1.0)


@asynccontextmanager
async def serve_linkbase(db: Database, env: Mapping[str, str]) -> AsyncIterator[grpc.aio.Channel]:
    """The link base's API as :func:`serve_linkbase_address` serves it, and a channel to it."""
    async with serve_linkbase_address(db, env) as address, grpc.aio.insecure_channel(address) as channel:
        yield channel


def test_every_method_has_a_request() -> None:
    assert set(REQUESTS) == set(methods(LINKBASE))


@pytest.mark.parametrize("metadata", list(NOT_AUTHENTICATED.values()), ids=list(NOT_AUTHENTICATED))
async def test_every_method_refuses_a_call_without_a_valid_token_and_changes_nothing(
    linkbase_db: Database, metadata: Metadata | None
) -> None:
    async with serve_linkbase(linkbase_db, {"TRAWL_ADMIN_TOKEN": TOKEN}) as channel:
        for name, method in methods(LINKBASE).items():
            code, details = await call(channel, method, REQUESTS[name], metadata)
            assert code == grpc.StatusCode.UNAUTHENTICATED, (name, code, details)
            assert TOKEN not in str(details)
        code, _ = await call(channel, methods(LINKBASE)["GetHost"], REQUESTS["GetHost"], bearer_metadata(TOKEN))
        assert code == grpc.StatusCode.NOT_FOUND  # the refused AddSites wrote nothing
    async with linkbase_db.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM linkbase.hosts")
        assert await cur.fetchone() == (0,)


async def test_every_method_works_with_the_token(linkbase_db: Database) -> None:
    async with serve_linkbase(linkbase_db, {"TRAWL_ADMIN_TOKEN": TOKEN}) as channel:
        found = {}
        for name in ["AddSites", *sorted(set(REQUESTS) - {"AddSites"})]:
            code, answer = await call(channel, methods(LINKBASE)[name], REQUESTS[name], bearer_metadata(TOKEN))
            assert code == grpc.StatusCode.OK, (name, code, answer)
            found[name] = answer
    assert found["AddSites"].accepted == 1
    assert found["GetHost"].seed.name == "Site A"
    assert found["GetUrl"].url == "http://a.test/" and found["GetUrlHistory"].url == "http://a.test/"


async def test_every_token_of_the_file_is_accepted(linkbase_db: Database, tmp_path: Path) -> None:
    token_file = tmp_path / "tokens"
    token_file.write_text("old-token\nnew-token\n")
    async with serve_linkbase(linkbase_db, {"TRAWL_ADMIN_TOKEN_FILE": str(token_file)}) as channel:
        for token in ("old-token", "new-token"):
            code, _ = await call(channel, methods(LINKBASE)["GetHost"], REQUESTS["GetHost"], bearer_metadata(token))
            assert code == grpc.StatusCode.NOT_FOUND  # past the guard: a.test is unknown
        code, _ = await call(channel, methods(LINKBASE)["GetHost"], REQUESTS["GetHost"], bearer_metadata("other"))
        assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_a_server_without_a_token_refuses_every_method(linkbase_db: Database) -> None:
    async with serve_linkbase(linkbase_db, {}) as channel:
        for name, method in methods(LINKBASE).items():
            for token in ("", "anything"):
                code, details = await call(channel, method, REQUESTS[name], bearer_metadata(token))
                assert code == grpc.StatusCode.UNAUTHENTICATED, (name, details)


async def test_health_and_reflection_answer_without_a_token(linkbase_db: Database) -> None:
    async with serve_linkbase(linkbase_db, {"TRAWL_ADMIN_TOKEN": TOKEN}) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        call_ = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                          timeout=5)
        names = {s.name for response in [r async for r in call_] for s in response.list_services_response.service}
    assert SERVICE_NAME in names and "grpc.health.v1.Health" in names


async def test_a_generic_client_lists_the_api_and_calls_it_with_the_token(linkbase_db: Database) -> None:
    pytest.importorskip("grpc_requests")
    service = SERVICE_NAME
    site = json.dumps({"sites": [{"name": "Site A", "start_url": "http://a.test/"}]})
    async with serve_linkbase_address(linkbase_db, {"TRAWL_ADMIN_TOKEN": TOKEN}) as address:
        anonymous = await reflection_probe(address, f"{service}/AddSites={site}",
                                           f"{service}/GetHost=" + json.dumps({"host": "a.test"}),
                                           "grpc.health.v1.Health/Check=" + json.dumps({"service": service}))
        allowed = await reflection_probe(address, f"{service}/AddSites={site}",
                                         f"{service}/GetHost=" + json.dumps({"host": "a.test"}), token=TOKEN)
    assert set(anonymous["services"][service]) == set(methods(LINKBASE))
    assert [c["code"] for c in anonymous["calls"]] == ["UNAUTHENTICATED", "UNAUTHENTICATED", "OK"]
    assert anonymous["calls"][2]["response"] == {"status": "SERVING"}
    added, host = allowed["calls"]
    assert added["code"] == "OK" and added["response"]["accepted"] == 1
    assert host["code"] == "OK" and host["response"]["seed"]["name"] == "Site A"
