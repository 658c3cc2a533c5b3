"""Service lifecycle: start components in order, drain on SIGTERM, stop them in reverse.

A service's ``main()`` is only::

    def main() -> None:
        run_service("fetcher", build)

where ``build(env)`` reads settings from ``env`` and returns a :class:`Service` made of
components with ``async start()`` / ``async stop()``. On SIGTERM or SIGINT: health goes
NOT_SERVING, components stop in reverse order (consumers stop consuming, finish in-flight
work, flush and commit), then the gRPC server and the pools close.

A dependency that is not there yet at start (PostgreSQL refusing connections, as when a pod
starts before its database) is waited for: the build and start are retried with a growing
pause, each attempt logged and counted, for up to ``TRAWL_STARTUP_WAIT_SECONDS``; then the
process exits with status 1 and a one-line reason (an orchestrator restarts it). A signal
ends the wait at once. Any other error at start is a bug and keeps its traceback.

A running service that can no longer make progress exits too. Every second it asks each
component that has a ``stalled()`` method (the Kafka producer and consumers) whether it
is stuck: a producer whose messages stay unacknowledged, a broker that stays away or came
back without its data, a consumer evicted from its group or whose loop died. The first
answer turns health NOT_SERVING at once and the process exits with status 1 without a
drain, as a crash would (what it consumed and did not commit is delivered again), for its
supervisor (``cli/stack/supervisor.py``, Kubernetes) to start it afresh.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import psycopg

from libs.common import metrics
from libs.common.collector import YOUNG_THRESHOLD, tune_collector
from libs.common.grpc_server import GrpcServer
from libs.common.logs import configure_logging
from libs.common.settings import SettingsError, setting
from libs.common.urls import UrlSettings, install_policy

log = logging.getLogger(__name__)


class Component(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@runtime_checkable
class Watched(Protocol):
    """A component that can tell it is stuck (see the module docstring)."""

    async def stalled(self) -> str | None: ...




@dataclass(frozen=True)
class RuntimeSettings:
    log_level: str = setting("TRAWL_LOG_LEVEL", "INFO", "Log level of the service.")
    metrics_port: int = setting("TRAWL_METRICS_PORT", 0, "Port of the Prometheus /metrics endpoint (0: off).")
    metrics_host: str = setting("TRAWL_METRICS_HOST", "127.0.0.1", "Address the metrics endpoint binds to.")
    grpc_address: str = setting(
        "TRAWL_GRPC_ADDRESS", "127.0.0.1:0", "host:port of the service's gRPC server (health, and its API if any)."
    )
    drain_seconds: float = setting(
        "TRAWL_DRAIN_SECONDS", 20.0, "Longest SIGTERM drain before in-flight work is abandoned (redelivered later)."
    )
    gc_young_threshold: int = setting(
        "TRAWL_GC_YOUNG_THRESHOLD", YOUNG_THRESHOLD,
        "Tracked objects allocated between two passes of the garbage collector's young generation (Python's"
        " default: 700; 0 turns automatic collection off). See libs/common/collector.py.",
    )
    startup_wait_seconds: float = setting(
        "TRAWL_STARTUP_WAIT_SECONDS",
        120.0,
        "How long a starting service waits for an unreachable database (retrying with a growing pause) before"
        " it exits with status 1.",
    )


class StartupFailed(RuntimeError):
    """A dependency stayed unreachable for the whole startup wait."""


# What an unreachable dependency raises while a service starts: retried, not a bug.
TRANSIENT_STARTUP_ERRORS: tuple[type[BaseException], ...] = (psycopg.OperationalError, ConnectionError)


class Service:
    """A named set of components plus a gRPC server; run until stopped."""

    def __init__(self, name: str, grpc_server: GrpcServer, components: Sequence[Component],
                 watch_interval: float = 1.0) -> None:
        self.name = name
        self.grpc = grpc_server
        self.components = list(components)
        self.failure: str | None = None  # why the service stopped on its own (it could not make progress)
        self._watch_interval = watch_interval
        self._stop = asyncio.Event()
        self._started: list[Component] = []
        self._watch_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.grpc.start()
        await self.grpc.set_serving(False)  # not before every component started (a dependency may be away)
        for component in self.components:
            await component.start()
            self._started.append(component)
        await self.grpc.set_serving(True)
        metrics.UP.labels(self.name).set(1)
        self._watch_task = asyncio.create_task(self._watch(), name=f"{self.name}-watch")
        log.info("%s started", self.name, extra={"grpc_port": self.grpc.port})

    async def _watch(self) -> None:
        """Asks the watched components whether they are stuck; the first that is stops the service."""
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), self._watch_interval)
                return
            except TimeoutError:
                pass
            for component in list(self._started):
                if not isinstance(component, Watched):
                    continue
                try:
                    reason = await component.stalled()
                except Exception:
                    log.exception("asking %s whether it is stuck failed", type(component).__name__)
                    continue
                if reason:
                    await self.fail(f"{type(component).__name__}: {reason}")
                    return

    async def fail(self, reason: str) -> None:
        """Marks the service NOT_SERVING at once and asks it to stop; the process then exits with status 1."""
        if self.failure is not None:
            return
        self.failure = reason
        log.error("%s cannot make progress: %s; exiting for a restart", self.name, reason,
                  extra={"reason": reason})
        metrics.UP.labels(self.name).set(0)
        await self.grpc.set_serving(False)
        self._stop.set()

    def request_stop(self) -> None:
        self._stop.set()

    async def wait(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        if self._watch_task is not None and self._watch_task is not asyncio.current_task():
            self._watch_task.cancel()
        metrics.UP.labels(self.name).set(0)
        await self.grpc.set_serving(False)
        for component in reversed(self._started):
            try:
                await component.stop()
            except Exception:
                log.exception("stopping %s failed", type(component).__name__)
        self._started.clear()
        await self.grpc.stop()
        log.info("%s stopped", self.name)


Builder = Callable[[Mapping[str, str]], Awaitable[Service]]


async def start_when_ready(name: str, build: Builder, env: Mapping[str, str], wait_seconds: float,
                           stopping: asyncio.Event) -> Service | None:
    """The built and started service, retrying while a dependency is unreachable (see the module docstring).

    Returns None if ``stopping`` is set meanwhile; raises :class:`StartupFailed` once
    ``wait_seconds`` have passed without a start.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    pause = 0.5
    attempt = 0
    while True:
        attempt += 1
        service: Service | None = None
        try:
            service = await build(env)
            await service.start()
            return service
        except TRANSIENT_STARTUP_ERRORS as exc:
            if service is not None:
                await service.stop()
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            metrics.STARTUP_RETRIES.labels(name).inc()
            left = deadline - loop.time()
            if left <= 0:
                raise StartupFailed(f"a dependency stayed unreachable for {wait_seconds:g} s: {reason}") from exc
            delay = min(pause, left)
            log.warning("cannot start yet (attempt %d): %s; retrying in %.1f s", attempt, reason, delay,
                        extra={"attempt": attempt})
            try:
                await asyncio.wait_for(stopping.wait(), delay)
                return None  # asked to stop while waiting
            except TimeoutError:
                pass
            pause = min(pause * 2, 10.0)


async def _serve(name: str, build: Builder, env: Mapping[str, str], wait_seconds: float,
                 gc_young_threshold: int = YOUNG_THRESHOLD) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    service = await start_when_ready(name, build, env, wait_seconds, stopping)
    if service is None:
        return
    tune_collector(gc_young_threshold)  # what the start built stays: out of the collector's passes
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, service.request_stop)
    if stopping.is_set():
        service.request_stop()
    try:
        await service.wait()
    finally:
        if service.failure is None:
            await service.stop()
    if service.failure is not None:
        # No drain: it would wait on what cannot make progress (a stuck flush), and a consumer leaving its
        # group in the middle of a rejoin leaves Tansu's group unable to assign anything. The process ends
        # as a crash would; what it held is delivered again to its next incarnation.
        _exit_stalled(name, service.failure)


def _exit_stalled(name: str, reason: str) -> None:
    """Exits with status 1 at once: not SystemExit, since threads stuck in a Kafka call would hold it."""
    print(f"{name}: exiting, no progress possible: {reason}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def run_service(name: str, build: Builder, env: Mapping[str, str] | None = None) -> None:
    """Entry point of every service process."""
    env = dict(os.environ if env is None else env)
    from libs.common.settings import load_settings

    try:
        runtime = load_settings(RuntimeSettings, env)
    except SettingsError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    try:
        install_policy(load_settings(UrlSettings, env).policy())
    except (SettingsError, ValueError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    configure_logging(name, runtime.log_level)
    metrics.declare_service(name)
    metrics.start_metrics_server(runtime.metrics_port, runtime.metrics_host)
    try:
        asyncio.run(_serve(name, build, env, runtime.startup_wait_seconds, runtime.gc_young_threshold))
    except SettingsError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    except StartupFailed as exc:
        log.error("%s could not start: %s", name, exc)
        print(f"{name}: could not start: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc

