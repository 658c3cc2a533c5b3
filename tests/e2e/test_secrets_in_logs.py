"""No secret in the logs: the scheduler process, at DEBUG level, never writes its admin token or database password.

The scheduler runs as its own process on the real broker and PostgreSQL, logged
in as a role with a password, with an admin token. Its log (stdout and stderr,
everything it wrote from start to drain) must contain neither, nor the wrong
tokens callers tried, after: refused admin calls (no token, a wrong token, the
right token in the wrong scheme), accepted ones, and a start against a database
that refuses connections (errors are where connection strings tend to leak).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import grpc
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from cli.admin_client import AdminClient
from cli.stack import health
from cli.stack.processes import ServiceProcess
from libs.common.topics import ALL_TOPICS
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from libs.localinfra import create_database, drop_database
from libs.localinfra.ports import free_port
from libs.localinfra.topics import create_topics

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

TOKEN = f"tok-{uuid.uuid4().hex}"
PASSWORD = f"pw {uuid.uuid4().hex[:12]}:@/'x"  # characters a connection string must quote or escape
WRONG_TOKEN = f"guess-{uuid.uuid4().hex}"


def _secrets() -> list[str]:
    return [TOKEN, PASSWORD, quote(PASSWORD, safe=""), PASSWORD.replace("'", "\\'"), WRONG_TOKEN]


@pytest.fixture
def role_dsn(pg_admin_dsn: str, unique_name: Callable[[str], str]) -> Iterator[str]:
    """A database owned by a new role with a password; the role's DSN."""
    role, database = unique_name("role"), unique_name("db")
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(PASSWORD)))
    create_database(pg_admin_dsn, database)
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(database), sql.Identifier(role)))
    try:
        yield make_conninfo(pg_admin_dsn, user=role, password=PASSWORD, dbname=database)
    finally:
        drop_database(pg_admin_dsn, database)
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _scheduler(bootstrap: str, dsn: str, prefix: str, log: Path, port: int) -> ServiceProcess:
    env = {
        "TRAWL_KAFKA_BOOTSTRAP": bootstrap,
        "TRAWL_DATABASE_URL": dsn,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_SCHEDULER_GROUP": f"{prefix}scheduler",
        "TRAWL_ADMIN_TOKEN": TOKEN,
        "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{port}",
        "TRAWL_LOG_LEVEL": "DEBUG",
        "TRAWL_DATABASE_CONNECT_TIMEOUT": "1",
    }
    return ServiceProcess("scheduler", env, log)


def _call(address: str, metadata: tuple[tuple[str, str], ...] | None) -> grpc.StatusCode:
    with grpc.insecure_channel(address) as channel:
        try:
            admin_grpc.AdminServiceStub(channel).AddSeeds(
                admin_pb.AddSeedsRequest(urls=["http://seed.example/"]), timeout=10.0, metadata=metadata)
        except grpc.RpcError as exc:
            code: grpc.StatusCode = exc.code()  # a grpc.Call at run time
            return code
    return grpc.StatusCode.OK


def test_neither_the_token_nor_the_password_is_ever_logged(
    kafka_bootstrap: str, role_dsn: str, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    prefix = unique_name("secrets") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in ALL_TOPICS])
    port = free_port()
    address = f"127.0.0.1:{port}"
    log = tmp_path / "scheduler.log"

    # a database that refuses connections: the service says so, without the connection string
    closed = make_conninfo(role_dsn, port=str(free_port()))
    refused = _scheduler(kafka_bootstrap, closed, prefix, log, port)
    refused.start()
    deadline = time.monotonic() + 20
    while refused.alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    refused.stop(timeout=20)
    assert log.read_text(errors="replace").strip(), "the refused start logged nothing"

    scheduler = _scheduler(kafka_bootstrap, role_dsn, prefix, log, port)
    scheduler.start()
    try:
        deadline = time.monotonic() + 60
        while health.check(address) != "SERVING":
            assert scheduler.alive(), f"the scheduler exited: see {log}"
            assert time.monotonic() < deadline, "the scheduler is not serving"
            time.sleep(0.2)
        attempts = {
            "no token": None,
            "wrong token": (("authorization", f"Bearer {WRONG_TOKEN}"),),
            "right token, wrong scheme": (("authorization", f"Basic {TOKEN}"),),
            "token in another header": (("x-admin-token", TOKEN),),
        }
        for name, metadata in attempts.items():
            assert _call(address, metadata) == grpc.StatusCode.UNAUTHENTICATED, name
        assert _call(address, (("authorization", f"Bearer {TOKEN}"),)) == grpc.StatusCode.OK
        with AdminClient(address, token=TOKEN) as admin:
            assert admin.stats()["frontier"].get("queued", 0) == 1
    finally:
        assert scheduler.stop(timeout=30) == 0
    text = log.read_text(errors="replace")
    assert "refused /trawl.v1.AdminService/AddSeeds" in text  # the refusals were logged, without the secrets
    for secret in _secrets():
        assert secret not in text
