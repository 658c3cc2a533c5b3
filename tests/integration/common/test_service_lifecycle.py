"""Service lifecycle: components start in order and stop in reverse; a real service process drains on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from libs.common import metrics
from libs.common.grpc_server import GrpcServer
from libs.common.service import Component, Service, StartupFailed, start_when_ready
from libs.common.topics import DEAD_LETTERS, DOCUMENTS, DUPLICATE_VERDICTS
from libs.localinfra import create_topics
from libs.localinfra.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[3]
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Recorder:
    """A component that writes its calls to a shared journal, and can be told to fail."""

    def __init__(self, name: str, journal: list[str], *, fail_start: bool | BaseException = False,
                 fail_stop: bool = False, probe: Callable[[], Any] | None = None) -> None:
        self.name = name
        self.journal = journal
        self.fail_start = fail_start
        self.fail_stop = fail_stop
        self.probe = probe
        self.seen: list[Any] = []

    async def start(self) -> None:
        self.journal.append(f"start {self.name}")
        if isinstance(self.fail_start, BaseException):
            raise self.fail_start
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


def _retries(name: str) -> float:
    return float(metrics.STARTUP_RETRIES.labels(name)._value.get())


async def test_an_unreachable_database_at_start_is_waited_for_then_the_service_starts() -> None:
    journal: list[str] = []
    unreachable = psycopg.OperationalError("connection refused")
    attempts: list[Service] = []

    async def build(_env: Any) -> Service:
        number = len(attempts) + 1
        journal.append(f"build {number}")
        if number == 1:  # e.g. the migrations cannot connect
            attempts.append(Service("waiting", GrpcServer("127.0.0.1:0"), []))
            raise unreachable
        # second attempt: the pool fails after the producer started; third: everything starts
        failing = unreachable if number == 2 else False
        components: list[Component] = [Recorder(f"producer{number}", journal),
                                       Recorder(f"db{number}", journal, fail_start=failing)]
        service = Service("waiting", GrpcServer("127.0.0.1:0"), components)
        attempts.append(service)
        return service

    before = _retries("waiting")
    service = await start_when_ready("waiting", build, {}, 30.0, asyncio.Event())
    assert service is attempts[-1]
    assert journal == ["build 1", "build 2", "start producer2", "start db2", "stop producer2",
                       "build 3", "start producer3", "start db3"]
    assert _retries("waiting") - before == 2
    await service.stop()


async def test_a_dependency_away_for_the_whole_wait_ends_the_start() -> None:
    calls: list[float] = []

    async def build(_env: Any) -> Service:
        calls.append(asyncio.get_running_loop().time())
        raise psycopg.OperationalError("connection to server at 127.0.0.1 failed: Connection refused")

    with pytest.raises(StartupFailed, match=r"unreachable for 1\.2 s: connection to server"):
        await start_when_ready("gone", build, {}, 1.2, asyncio.Event())
    assert len(calls) >= 2  # retried, with growing pauses
    assert calls[-1] - calls[0] <= 1.2 + 0.5


async def test_a_stop_signal_ends_the_wait_at_once() -> None:
    stopping = asyncio.Event()

    async def build(_env: Any) -> Service:
        asyncio.get_running_loop().call_later(0.1, stopping.set)
        raise psycopg.OperationalError("connection refused")

    started = asyncio.get_running_loop().time()
    assert await start_when_ready("stopped", build, {}, 60.0, stopping) is None
    assert asyncio.get_running_loop().time() - started < 5.0


async def test_other_errors_at_start_are_not_retried() -> None:
    calls: list[int] = []

    async def build(_env: Any) -> Service:
        calls.append(1)
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError, match="a bug"):
        await start_when_ready("buggy", build, {}, 30.0, asyncio.Event())
    assert calls == [1]


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
            said = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"service exited early with {process.returncode}: {said}")
        try:
            if _health(port, timeout=0.5) == SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no SERVING health answer on port {port} within {timeout}s")


def _serve_then_stop(env: dict[str, str], serving_timeout: float = 30.0) -> tuple[int, str, str]:
    """Runs the dedup service until it serves, then SIGTERM: (exit code, stdout, stderr)."""
    port = int(env["TRAWL_GRPC_ADDRESS"].rsplit(":", 1)[1])
    process = subprocess.Popen([sys.executable, "-m", "services.dedup"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_serving(process, port, serving_timeout)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stdout, stderr


def test_a_service_process_serves_health_and_drains_on_sigterm(dedup_env: dict[str, str]) -> None:
    port = int(dedup_env["TRAWL_GRPC_ADDRESS"].rsplit(":", 1)[1])
    returncode, stdout, stderr = _serve_then_stop(dedup_env)

    assert returncode == 0, stderr
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


def _closed_port_dsn(dsn: str, port: int) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info.update(host="127.0.0.1", port=str(port))
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def test_a_service_without_its_database_waits_then_exits_1_with_the_reason(dedup_env: dict[str, str]) -> None:
    env = {**dedup_env, "TRAWL_DATABASE_URL": _closed_port_dsn(dedup_env["TRAWL_DATABASE_URL"], free_port()),
           "TRAWL_STARTUP_WAIT_SECONDS": "2"}
    done = subprocess.run([sys.executable, "-m", "services.dedup"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "dedup: could not start: a dependency stayed unreachable for 2 s" in done.stderr
    assert "Traceback" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    waits = [line for line in lines if line["msg"].startswith("cannot start yet")]
    assert len(waits) >= 2 and all(line["level"] == "warning" for line in waits)
    assert lines[-1]["level"] == "error" and "could not start" in lines[-1]["msg"]


class _LateRelay:
    """A loopback TCP relay to PostgreSQL that starts listening only after ``delay`` seconds."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.port = free_port()
        self._target = target
        self._timer = threading.Timer(delay, self._listen)
        self._listener: socket.socket | None = None
        self._closed = threading.Event()

    def __enter__(self) -> _LateRelay:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        self._closed.set()
        if self._listener is not None:
            self._listener.close()

    def _listen(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_a_service_started_before_its_database_serves_once_the_database_is_there(
    dedup_env: dict[str, str],
) -> None:
    info = psycopg.conninfo.conninfo_to_dict(dedup_env["TRAWL_DATABASE_URL"])
    target = (str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432))
    with _LateRelay(target, delay=2.0) as relay:
        env = {**dedup_env, "TRAWL_DATABASE_URL": _closed_port_dsn(dedup_env["TRAWL_DATABASE_URL"], relay.port)}
        returncode, stdout, stderr = _serve_then_stop(env, serving_timeout=45)
    assert returncode == 0, stderr
    messages = [json.loads(line)["msg"] for line in stdout.splitlines() if line.startswith("{")]
    assert any(m.startswith("cannot start yet") for m in messages)
    assert "dedup started" in messages
