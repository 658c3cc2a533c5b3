"""Shared fixtures: the real PostgreSQL server and Kafka-compatible broker the tests run against.

Each server is started once per test session, on free loopback ports, in a
temporary folder, and stopped at the end (also from ``atexit`` if the session
dies before its teardown). An existing server named by an environment
variable always wins and is never started or stopped here:

- ``TRAWL_TEST_PG_DSN``: a PostgreSQL DSN whose user may create databases;
- ``TRAWL_TEST_KAFKA_BOOTSTRAP``: a Kafka ``bootstrap.servers`` value.

Tests share the servers, so every database, topic and consumer group a test
creates is named with :func:`unique_name`.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import FrameType

import pytest

from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.localinfra import (
    LocalBroker,
    LocalPostgres,
    create_database,
    drop_database,
    dsn_with_database,
    free_port,
)

PG_DSN_ENV = "TRAWL_TEST_PG_DSN"
KAFKA_BOOTSTRAP_ENV = "TRAWL_TEST_KAFKA_BOOTSTRAP"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """Treat SIGTERM (a cancelled CI job) like Ctrl-C, so that fixture teardown stops the servers."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


@contextmanager
def broker_of_its_own(prefix: str) -> Iterator[LocalBroker]:
    """A broker started for one test (which may kill and restart it), stopped and removed after."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    broker = LocalBroker(root / "broker", free_port())
    try:
        broker.ensure_started()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


@asynccontextmanager
async def running_producer(kafka: KafkaSettings, client_id: str) -> AsyncIterator[TopicProducer]:
    """A started producer, stopped (its messages flushed) on the way out."""
    producer = TopicProducer(kafka, client_id)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()


def make_unique_name(prefix: str, hint: str = "") -> str:
    """A name no other test uses, valid as a topic, consumer group or database name.

    Lowercase letters, digits and ``_`` only, at most 63 characters (the
    PostgreSQL identifier limit); ``hint`` (a test name) is kept readable.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", hint.lower()).strip("_")[:30]
    parts = [re.sub(r"[^a-z0-9]+", "_", prefix.lower()).strip("_"), slug, uuid.uuid4().hex[:10]]
    return "_".join(part for part in parts if part)[:63]


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("topic")`` -> a name no other test uses, built from the test's name."""
    hint = request.node.name

    def make(prefix: str = "t") -> str:
        return make_unique_name(prefix, hint)

    return make


@pytest.fixture(scope="session")
def localinfra_root() -> Iterator[Path]:
    """A session folder for the servers' data, removed at the end.

    Made under the system temporary folder and opened up (0755) rather than
    under pytest's ``tmp_path``, whose ``0700`` root the unprivileged
    PostgreSQL user could not traverse.
    """
    root = Path(tempfile.mkdtemp(prefix="trawl-test-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


# -- PostgreSQL ---------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server(localinfra_root: Path) -> Iterator[LocalPostgres | None]:
    """The session's LocalPostgres (fast mode), or None when ``TRAWL_TEST_PG_DSN`` names a server."""
    if os.environ.get(PG_DSN_ENV):
        yield None
        return
    server = LocalPostgres(localinfra_root / "pgdata", free_port(), fast=True)
    atexit.register(server.stop)
    try:
        server.ensure_started()
        yield server
    finally:
        server.stop()
        atexit.unregister(server.stop)


@pytest.fixture(scope="session")
def pg_admin_dsn(pg_server: LocalPostgres | None) -> str:
    """A DSN with the right to create and drop databases on the session's server."""
    if pg_server is None:
        return os.environ[PG_DSN_ENV]
    return pg_server.dsn("postgres")


def _fresh_database(admin_dsn: str, hint: str) -> Iterator[str]:
    name = make_unique_name("db", hint)
    create_database(admin_dsn, name)
    try:
        yield dsn_with_database(admin_dsn, name)
    finally:
        drop_database(admin_dsn, name)


@pytest.fixture
def fresh_db(pg_admin_dsn: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The DSN of a new, empty database for this test only, dropped afterwards."""
    yield from _fresh_database(pg_admin_dsn, request.node.name)


@pytest.fixture(scope="module")
def pg_dsn(pg_admin_dsn: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The DSN of a new, empty database shared by this test module, dropped afterwards."""
    yield from _fresh_database(pg_admin_dsn, request.module.__name__.rsplit(".", 1)[-1])


# -- Kafka ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_broker(localinfra_root: Path) -> Iterator[LocalBroker | None]:
    """The session's LocalBroker, or None when ``TRAWL_TEST_KAFKA_BOOTSTRAP`` names a broker."""
    if os.environ.get(KAFKA_BOOTSTRAP_ENV):
        yield None
        return
    broker = LocalBroker(localinfra_root / "broker", free_port())
    atexit.register(broker.stop)
    try:
        broker.ensure_started()
        yield broker
    finally:
        broker.stop()
        atexit.unregister(broker.stop)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: LocalBroker | None) -> str:
    """The ``bootstrap.servers`` value of the session's broker."""
    if kafka_broker is None:
        return os.environ[KAFKA_BOOTSTRAP_ENV]
    return kafka_broker.bootstrap
