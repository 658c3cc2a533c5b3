"""The Kafka clients through a broker restart, on a real broker of this module alone (it is killed here).

Tansu's memory-only build comes back with no topics, messages or offsets: the producer
says so within seconds (``stalled``), a broker that stays away is reported after
``stall_seconds``, no client creates a topic by producing to it, and a service whose
component is stuck turns NOT_SERVING and exits with status 1.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from libs.common.kafka.consumer import Record, TopicConsumer, TopicHandler
from libs.common.kafka.producer import DeliveryFailed, TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.kafka.topic_admin import admin_client, partition_counts
from libs.common.topics import ALL_TOPICS, DISCOVERED_URLS
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, free_port
from tests.conftest import broker_of_its_own, make_unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    with broker_of_its_own("trawl-broker-clients-") as own:
        yield own


@pytest.fixture
async def producer(broker: LocalBroker) -> AsyncIterator[TopicProducer]:
    settings = KafkaSettings(bootstrap=broker.bootstrap, topic_prefix=make_unique_name("restart") + ".",
                             stall_seconds=2.0)
    started = TopicProducer(settings, "restart-test")
    await started.start()
    try:
        yield started
    finally:
        with_timeout = asyncio.wait_for(started.stop(), 5)
        try:
            await with_timeout
        except (TimeoutError, DeliveryFailed):
            pass


def _kill(broker: LocalBroker) -> None:
    pid = broker.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)


async def _stalled_within(producer: TopicProducer, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reason = await producer.stalled()
        if reason:
            return reason
        await asyncio.sleep(0.2)
    raise AssertionError(f"not stalled within {seconds}s")


async def test_start_creates_the_declared_topics_and_a_produce_creates_none(
        broker: LocalBroker, producer: TopicProducer) -> None:
    settings = KafkaSettings(bootstrap=broker.bootstrap)
    prefix = producer._settings.topic_prefix
    counts = partition_counts(admin_client(broker.bootstrap), 5.0)
    assert {t.name: counts.get(prefix + t.name) for t in ALL_TOPICS} == {t.name: t.partitions for t in ALL_TOPICS}
    producer.send_raw(prefix + "undeclared", b"k", b"v")
    with pytest.raises(DeliveryFailed):
        await producer.flush(timeout=1.0)
    assert prefix + "undeclared" not in partition_counts(admin_client(settings.bootstrap), 5.0)


async def test_a_broker_that_comes_back_empty_is_told_within_seconds(
    broker: LocalBroker, producer: TopicProducer
) -> None:
    producer.send(DISCOVERED_URLS, "a.test", pb.DiscoveredUrl(url="http://a.test/", host="a.test"))
    await producer.flush()
    assert await producer.stalled() is None
    _kill(broker)
    broker.ensure_started()
    reason = await _stalled_within(producer, 10.0)
    assert "came back without the topics" in reason


async def test_a_broker_away_is_told_after_the_stall_seconds(broker: LocalBroker, producer: TopicProducer) -> None:
    _kill(broker)
    producer.send(DISCOVERED_URLS, "a.test", pb.DiscoveredUrl(url="http://a.test/", host="a.test"))
    flush = asyncio.create_task(producer.flush(timeout=30.0))
    started = time.monotonic()
    reason = await _stalled_within(producer, 10.0)
    assert time.monotonic() - started >= 1.5  # stall_seconds is 2
    assert "not acknowledged" in reason or "has not answered" in reason
    flush.cancel()


async def test_a_consumer_whose_loop_ended_is_stalled(broker: LocalBroker, producer: TopicProducer) -> None:
    async def handler(records: Sequence[Record[pb.DiscoveredUrl]]) -> None:
        pass

    consumer = TopicConsumer(producer._settings, service="restart-test", group_id=make_unique_name("g"),
                             handlers=[TopicHandler(DISCOVERED_URLS, handler)], producer=producer)
    await consumer.start()
    try:
        assert await consumer.stalled() is None
        assert consumer._task is not None
        consumer._task.cancel()
        await asyncio.sleep(0.1)
        assert await consumer.stalled() == "the consume loop ended"
    finally:
        await consumer.stop(drain_timeout=1.0)


STUCK_SERVICE = """
import asyncio, sys
from libs.common.grpc_server import GrpcServer
from libs.common.service import Service, run_service

class Stuck:
    async def start(self): pass
    async def stop(self): await asyncio.sleep(60)  # a drain that never ends: the exit must not wait for it
    async def stalled(self):
        return "stuck on purpose" if asyncio.get_running_loop().time() > START + 1.5 else None

async def build(env):
    global START
    START = asyncio.get_running_loop().time()
    return Service("stuck", GrpcServer(env["TRAWL_GRPC_ADDRESS"]), [Stuck()])

run_service("stuck", build)
"""


def test_a_stuck_service_turns_not_serving_and_exits_with_status_1() -> None:
    from cli.stack import health

    address = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "TRAWL_GRPC_ADDRESS": address, "TRAWL_METRICS_PORT": "0"}
    proc = subprocess.Popen([sys.executable, "-c", STUCK_SERVICE], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        seen = set()
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            seen.add(health.check(address, timeout=0.5))
            time.sleep(0.1)
        code = proc.wait(timeout=10)
        output = proc.stdout.read().decode() if proc.stdout else ""
    finally:
        proc.kill()
    assert code == 1, output
    assert "SERVING" in seen
    assert "stuck on purpose" in output
