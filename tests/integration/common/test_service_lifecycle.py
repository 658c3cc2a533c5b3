"""Service lifecycle: components start in order and stop in reverse; a real service process drains on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from libs.common.grpc_server import GrpcServer
from libs.common.service import Component, Service
from libs.common.topics import DEAD_LETTERS, DOCUMENTS, DUPLICATE_VERDICTS
from libs.localinfra import create_topics
from libs.localinfra.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[3]
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Recorder:
    """A component that writes its calls to a shared journal, and can be told to fail."""

    def __init__(self, name: str, journal: list[str], *, fail_start: bool = False, fail_stop: bool = False,
                 probe: Callable[[], Any] | None = None) -> None:
        self.name = name
        self.journal = journal
        self.fail_start = fail_start
        self.fail_stop = fail_stop
        self.probe = probe
        self.seen: list[Any] = []

    async def start(self) -> None:
        self.journal.append(f"start {self.name}")
        if self.fail_start:
            raise RuntimeError(f"{self.name} cannot start")

    async def stop(self) -> None:
        self.journal.append(f"stop {self.name}")
        if self.probe is not None:
            self.seen.append(await self.probe())
        if self.fail_stop:
            raise RuntimeError(f"{self.name} cannot stop")


def _health(port: int, timeout: float = 2.0) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
    return int(response.status)


async def _async_health(port: int) -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        response = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
    return int(response.status)


# -- in process ----------------------------------------------------------------------------------


async def test_components_start_in_order_and_stop_in_reverse() -> None:
    journal: list[str] = []
    grpc_server = GrpcServer("127.0.0.1:0")
    first = Recorder("db", journal)
    # the last component stops first, while health already says NOT_SERVING
    last = Recorder("consumer", journal, probe=lambda: _async_health(grpc_server.port))
    components: list[Component] = [first, Recorder("producer", journal), last]
    service = Service("demo", grpc_server, components)

    await service.start()
    assert journal == ["start db", "start producer", "start consumer"]
    assert await _async_health(grpc_server.port) == SERVING

    service.request_stop()
    await service.wait()
    await service.stop()
    assert journal[3:] == ["stop consumer", "stop producer", "stop db"]
    assert last.seen == [NOT_SERVING]

    await service.stop()  # a second stop stops nothing twice
    assert len(journal) == 6


async def test_a_component_that_fails_to_start_leaves_only_the_started_ones_to_stop() -> None:
    journal: list[str] = []
    service = Service("demo", GrpcServer("127.0.0.1:0"), [
        Recorder("db", journal), Recorder("producer", journal, fail_start=True), Recorder("consumer", journal),
    ])
    with pytest.raises(RuntimeError, match="producer cannot start"):
        await service.start()
    await service.stop()
    assert journal == ["start db", "start producer", "stop db"]


async def test_a_component_failing_to_stop_does_not_keep_the_others_running() -> None:
    journal: list[str] = []
    grpc_server = GrpcServer("127.0.0.1:0")
    service = Service("demo", grpc_server, [
        Recorder("db", journal), Recorder("producer", journal, fail_stop=True), Recorder("consumer", journal),
    ])
    await service.start()
    port = grpc_server.port
    await service.stop()
    assert journal[3:] == ["stop consumer", "stop producer", "stop db"]
    with pytest.raises(grpc.aio.AioRpcError):
        await _async_health(port)


# -- a real service process ----------------------------------------------------------------------


def _service_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(settings)
    return env


@pytest.fixture
def dedup_env(kafka_bootstrap: str, fresh_db: str, unique_name: Callable[[str], str]) -> Iterator[dict[str, str]]:
    prefix = unique_name("t") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions) for t in (DOCUMENTS, DUPLICATE_VERDICTS,
                                                                              DEAD_LETTERS)])
    yield _service_env(
        TRAWL_DATABASE_URL=fresh_db,
        TRAWL_KAFKA_BOOTSTRAP=kafka_bootstrap,
        TRAWL_TOPIC_PREFIX=prefix,
        TRAWL_GRPC_ADDRESS=f"127.0.0.1:{free_port()}",
        TRAWL_DEDUP_GROUP=unique_name("dedup"),
        TRAWL_KAFKA_SESSION_TIMEOUT_MS="3000",
        TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS="500",
    )


def _wait_serving(process: subprocess.Popen[str], port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"service exited early with {process.returncode}: {process.stderr.read()}")
        try:
            if _health(port, timeout=0.5) == SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no SERVING health answer on port {port} within {timeout}s")


def test_a_service_process_serves_health_and_drains_on_sigterm(dedup_env: dict[str, str]) -> None:
    port = int(dedup_env["TRAWL_GRPC_ADDRESS"].rsplit(":", 1)[1])
    process = subprocess.Popen([sys.executable, "-m", "services.dedup"], cwd=ROOT, env=dedup_env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_serving(process, port)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert lines, stdout
    assert all(line["service"] == "dedup" for line in lines)
    messages = [line["msg"] for line in lines]
    assert "dedup started" in messages
    assert messages[-1] == "dedup stopped"
    assert not [line for line in lines if line["level"] in ("error", "critical")]
    with pytest.raises(grpc.RpcError):
        _health(port, timeout=0.5)


def test_a_missing_required_setting_exits_2_naming_it(dedup_env: dict[str, str]) -> None:
    env = {k: v for k, v in dedup_env.items() if k != "TRAWL_DATABASE_URL"}
    done = subprocess.run([sys.executable, "-m", "services.dedup"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "TRAWL_DATABASE_URL" in done.stderr
    assert "libpq connection string" in done.stderr  # the setting's doc
    assert "Traceback" not in done.stderr


def test_a_bad_runtime_setting_exits_2_naming_it(dedup_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "services.dedup"], cwd=ROOT,
                          env={**dedup_env, "TRAWL_DRAIN_SECONDS": "soon"}, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2
    assert "TRAWL_DRAIN_SECONDS='soon'" in done.stderr
    assert "Traceback" not in done.stderr
