"""LocalBroker and create_topics against the real Tansu broker."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from libs.localinfra import LocalBroker, LocalInfraError, create_topics, free_port, procs

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def own_broker(localinfra_root: Path, unique_name: Callable[[str], str]) -> Iterator[LocalBroker]:
    """A broker of this test's own (the shared one must keep running), stopped afterwards."""
    broker = LocalBroker(localinfra_root / unique_name("broker"), free_port())
    try:
        yield broker
    finally:
        broker.stop()


def test_ensure_started_twice_then_stop_leaves_no_process(own_broker: LocalBroker) -> None:
    bootstrap = own_broker.ensure_started()
    pid = own_broker.pid()
    assert bootstrap == f"127.0.0.1:{own_broker.port}"
    assert pid is not None

    assert own_broker.ensure_started() == bootstrap
    assert own_broker.pid() == pid

    own_broker.stop()

    assert not procs.pid_alive(pid)
    assert not own_broker.pid_file.exists()
    assert not own_broker.is_running()


def test_broker_outlives_the_process_that_started_it(own_broker: LocalBroker) -> None:
    script = (
        "import sys; from pathlib import Path; from libs.localinfra import LocalBroker; "
        "print(LocalBroker(Path(sys.argv[1]), int(sys.argv[2])).ensure_started())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(own_broker.data_dir), str(own_broker.port)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == own_broker.bootstrap
    pid = own_broker.pid()
    assert pid is not None

    assert own_broker.ensure_started() == own_broker.bootstrap
    assert own_broker.pid() == pid


def test_refuses_a_port_taken_by_something_else(own_broker: LocalBroker) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", own_broker.port))
        squatter.listen()
        with pytest.raises(LocalInfraError, match="already listens"):
            own_broker.ensure_started()
    assert not own_broker.is_running()


def test_produce_and_consume_with_a_group(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> None:
    topic, group = unique_name("topic"), unique_name("group")
    create_topics(kafka_bootstrap, [(topic, 1)])
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"example.com", value=b"hello")
    assert producer.flush(10) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(0.5)
            if polled is not None and polled.error() is None:
                message = polled
        assert message is not None, "no message within 30 s"
        assert (message.key(), message.value()) == (b"example.com", b"hello")
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()


def test_create_topics_is_idempotent(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> None:
    wide, narrow = unique_name("wide"), unique_name("narrow")

    assert sorted(create_topics(kafka_bootstrap, [(wide, 6), (narrow, 1)])) == sorted([wide, narrow])
    assert create_topics(kafka_bootstrap, [(wide, 6), (narrow, 1)]) == []

    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert len(topics[wide].partitions) == 6
    assert len(topics[narrow].partitions) == 1
    with pytest.raises(LocalInfraError, match="wrong partition count"):
        create_topics(kafka_bootstrap, [(wide, 3)])
