"""One crawl of a served simulated web by the whole local stack, watched from /proc and the broker.

The stack is the one ``trawl demo`` runs (``cli.stack.local_stack``: the Tansu broker,
PostgreSQL, the six services as processes under the supervisor) in a throwaway home under
/var/tmp on free ports, with the demo's settings (``cli.demo.DEMO_ENV``) and no WARC archive
unless told otherwise (``tuning=REACH_ENV``: the services' defaults, with only what reaching
the simulated web needs). Its fetcher reaches the web through the web's server as a proxy. While it
crawls, a :class:`~bench.proc_usage.Sampler` reads the CPU time and memory of every
service, of PostgreSQL (the postmaster and its backends) and of the broker, and every few
seconds the consumer lag of each service's group is read from the broker.

With ``replicas`` (service -> processes), a service runs more processes in its consumer group
(``<service>.2``, ``<service>.3`` ...: the stack's environment with a gRPC port of their own), started
once the stack serves and watched as parts of their own; the crawl is seeded once each owns partitions.
With ``idle_seconds``, the CPU each part spends with nothing to crawl (consumers' empty fetches,
timers) is read for that long before the seeds go in.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO
from bench.proc_usage import PartUsage, Sampler
from cli.demo import DEMO_ENV
from cli.stack import health, local_stack
from cli.stack.layout import SERVICES, StackSettings, StackState, logs_dir, run_dir
from cli.stack.processes import ServiceProcess, owned_partitions
from libs.common.kafka.ends import watermarks
from libs.common.settings import load_settings
from libs.common.topics import ALL_TOPICS
from libs.localinfra import procs
from libs.localinfra.pgadmin import create_database, drop_database
from libs.simweb.process import SimWebProcess
from libs.simweb.request_log import RequestRecord

DATABASE = "trawl_bench"
DEMO_TUNING: Mapping[str, str] = {**DEMO_ENV, "TRAWL_FETCHER_WARC_DIR": ""}
"""The end-to-end benchmark's settings: the demo's, and no WARC archive."""
REACH_ENV: Mapping[str, str] = {"TRAWL_FETCHER_SSRF_ALLOW": "*.test"}
"""All that the services' defaults need to crawl the simulated web besides its proxy: its hosts let through
the SSRF guard by name."""
SETTLE_SECONDS = 3.0
LAG_EVERY_SECONDS = 3.0
WATCH_EVERY_SECONDS = 1.0
"""How often the crawl's stats are read to see it end. Each read counts the whole frontier by status (the admin
API's GetCrawlStats): at 16,000 pages about 10 ms of PostgreSQL, which a crawl must not be charged 4 times a
second; the crawl's time is the server log's, so the watch only decides when to stop sampling."""
REPLICA_READY_SECONDS = 120.0
IDLE_SETTLE_SECONDS = 3.0
Probe = Callable[[str, dict[str, tuple[int, bool]]], None]
"""Called with ("mark", parts) when the CPU counters start and ("idle", parts) when the crawl is over."""


@dataclass
class StackCrawl:
    """What one crawl did and cost."""

    log: list[RequestRecord]
    usage: dict[str, PartUsage]
    seconds_to_idle: float  # seeding to an idle frontier, less the settle period
    max_lag: dict[str, int] = field(default_factory=dict)  # service -> largest total lag seen
    mean_lag: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)  # topic -> messages written during the crawl
    idle_cpu: dict[str, float] = field(default_factory=dict)  # part -> CPU seconds before seeding, stack idle
    idle_seconds: float = 0.0  # how long that was


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def low_port_block(size: int) -> int:
    """A first port such that it and the ``size - 1`` after it are free, below the kernel's ephemeral
    range (32768+): a port picked there can be taken by an outgoing connection before a service binds it."""
    for _ in range(200):
        base = random.randrange(20000, 32700 - size)
        if all(_bindable(base + i) for i in range(size)):
            return base
    raise RuntimeError("no block of free ports below 32768")


def stack_env(home: Path, extra_ports: int = 0) -> dict[str, str]:
    """This process's environment without any TRAWL_ setting, plus a home and ports of its own (and
    ``extra_ports`` free ones after the services' gRPC ports, for replicas)."""
    base = low_port_block(len(SERVICES) + 2 + extra_ports)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update({
        "TRAWL_HOME": str(home),
        "TRAWL_LOCAL_BROKER_PORT": str(base),
        "TRAWL_LOCAL_POSTGRES_PORT": str(base + 1),
        "TRAWL_LOCAL_GRPC_BASE_PORT": str(base + 2),
        "TRAWL_LOCAL_METRICS_BASE_PORT": "0",
    })
    return env


def _pid(path: Path) -> int:
    pid = procs.read_pid(path)
    if pid is None:
        raise RuntimeError(f"no pid in {path}")
    return pid


def stack_parts(settings: StackSettings) -> dict[str, tuple[int, bool]]:
    """Root pid of every part of a running local stack, each counted with its children (PostgreSQL's
    backends, the extractor's worker processes, the fetcher's WARC writer)."""
    parts = {name: (_pid(run_dir(settings) / f"{name}.pid"), True) for name in SERVICES}
    postmaster = local_stack._postgres(settings).pid()  # the stack's own server, found as `trawl down` finds it
    broker = local_stack._broker(settings).pid()
    if postmaster is None or broker is None:
        raise RuntimeError("the stack's PostgreSQL or broker is not running")
    parts["postgres"] = (postmaster, True)
    parts["broker"] = (broker, False)
    return parts


def replica_names(replicas: Mapping[str, int]) -> list[tuple[str, str]]:
    """(service, process name) of every process beyond a service's first: ``fetcher.2``, ``fetcher.3`` ..."""
    unknown = set(replicas) - set(SERVICES)
    if unknown:
        raise ValueError(f"not services of the stack: {sorted(unknown)}")
    return [(service, f"{service}.{i}") for service in SERVICES for i in range(2, replicas.get(service, 1) + 1)]


def start_replicas(settings: StackSettings, state: StackState, replicas: Mapping[str, int],
                   first_port: int) -> dict[str, ServiceProcess]:
    """Starts the extra processes of each service (the stack's environment for it, gRPC on ``first_port``
    and after, no metrics port) and waits until every process of those services serves and owns partitions."""
    started: dict[str, ServiceProcess] = {}
    addresses: dict[str, str] = {}
    for i, (service, name) in enumerate(replica_names(replicas)):
        addresses[name] = f"127.0.0.1:{first_port + i}"
        env = {**state.services[service], "TRAWL_GRPC_ADDRESS": addresses[name], "TRAWL_METRICS_PORT": "0"}
        process = ServiceProcess(name, env, logs_dir(settings) / f"{name}.log", module=f"services.{service}")
        process.start()
        started[name] = process
    logs = [logs_dir(settings) / f"{name}.log" for name in started]
    logs += [logs_dir(settings) / f"{service}.log" for service in {s for s, _ in replica_names(replicas)}]
    deadline = time.monotonic() + REPLICA_READY_SECONDS
    while True:
        waiting = [name for name, a in addresses.items() if health.check(a) != "SERVING"]
        waiting += [path.stem for path in logs if not owned_partitions(path)]
        if not waiting:
            break
        for name, process in started.items():
            if not process.alive():
                raise RuntimeError(f"replica {name} exited: {procs.tail(process.log_path, 5)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{waiting} not serving with partitions of their own within {REPLICA_READY_SECONDS} s:"
                               f" {procs.tail(logs_dir(settings) / (waiting[0] + '.log'), 5)}")
        time.sleep(0.5)
    return started


def stop_replicas(processes: Mapping[str, ServiceProcess], timeout: float = 60.0) -> None:
    """SIGTERM to all at once, then each drained (or killed after ``timeout``)."""
    for process in processes.values():
        process.signal(signal.SIGTERM)
    for process in processes.values():
        process.stop(timeout)


def topic_messages(bootstrap: str, prefix: str) -> dict[str, int]:
    """Messages on each of the crawl's topics (high less low watermark, over its partitions)."""
    tps = [(prefix + t.name, p) for t in ALL_TOPICS for p in range(t.partitions)]
    counts: dict[str, int] = {}
    for (name, _), (low, high) in watermarks(bootstrap, tps, timeout=10.0).items():
        topic = name.removeprefix(prefix)
        counts[topic] = counts.get(topic, 0) + high - low
    return counts


@contextmanager
def bench_stack(web_url: str, tuning: Mapping[str, str], overrides: Mapping[str, str] | None = None, *,
                extra_ports: int = 0) -> Iterator[tuple[StackSettings, StackState, dict[str, str]]]:
    """The local stack on a fresh database of a throwaway home, its services crawling through ``web_url``: they
    get ``tuning``, the web's proxy and the ``bench.`` topic prefix, then ``overrides``. Gives the stack's
    settings, its state and the services' environment; takes it all down on the way out."""
    home = Path(tempfile.mkdtemp(prefix="trawl-bench-e2e-", dir="/var/tmp"))
    home.chmod(0o755)  # the PostgreSQL account must be able to enter it
    env = stack_env(home, extra_ports=extra_ports)
    settings = load_settings(StackSettings, env)
    # takes the stack down should this process die without doing so (bench/stack_guard.py)
    guard = subprocess.Popen([sys.executable, "-m", "bench.stack_guard", str(os.getpid())], env=env, cwd=REPO,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        admin_dsn = local_stack.ensure_postgres(settings, env)
        drop_database(admin_dsn, DATABASE)
        create_database(admin_dsn, DATABASE)
        services_env = {**env, **tuning, "TRAWL_FETCHER_PROXY": web_url, "TRAWL_TOPIC_PREFIX": "bench.",
                        **(overrides or {})}
        yield settings, local_stack.up(settings, services_env, database=DATABASE), services_env
    finally:
        guard.terminate()
        guard.wait()
        local_stack.down(settings)
        shutil.rmtree(home, ignore_errors=True)


def crawl_with_stack(web: SimWebProcess, seeds: list[str], *, overrides: Mapping[str, str] | None = None,
                     timeout: float = 900.0, watch_lag: bool = True,
                     tuning: Mapping[str, str] = DEMO_TUNING, replicas: Mapping[str, int] | None = None,
                     probe: Probe | None = None, idle_seconds: float = 0.0) -> StackCrawl:
    """Crawls ``web`` from ``seeds`` to an idle frontier. The services get ``tuning`` (by default the demo's
    settings), the web's proxy and a topic prefix, then ``overrides``; ``replicas`` runs more processes of
    the services it names (their usage is reported as ``<service>.2`` ...); ``probe`` is told when the CPU
    counters start and when the crawl is over; with ``idle_seconds``, the CPU each part spends that long with
    nothing to crawl is read before the seeds go in (``StackCrawl.idle_cpu``)."""
    extra = replica_names(replicas or {})
    replica_processes: dict[str, ServiceProcess] = {}
    with bench_stack(web.url, tuning, overrides, extra_ports=len(extra)) as (settings, state, stack_env_):
        try:
            if extra:
                replica_processes = start_replicas(settings, state, replicas or {},
                                                   settings.grpc_base_port + len(SERVICES))
            parts = {**stack_parts(settings), **{name: (p.pid, True) for name, p in replica_processes.items() if p.pid},
                     "simweb": (web.pid, False)}
            sampler = Sampler(parts)
            sampler.start()
            lags: dict[str, list[int]] = {}
            idle_cpu: dict[str, float] = {}
            with local_stack.admin_client(settings, state) as admin:
                if idle_seconds > 0:
                    time.sleep(IDLE_SETTLE_SECONDS)  # past the services' start-up work
                    sampler.mark()
                    time.sleep(idle_seconds)
                    sampler.sample()
                    idle_cpu = {name: part.cpu_seconds for name, part in sampler.usage.items()}
                sampler.mark()
                if probe is not None:
                    probe("mark", parts)
                started = time.monotonic()
                admin.add_seeds(seeds)
                idle_since: float | None = None
                next_lag = started + LAG_EVERY_SECONDS
                while True:
                    stats = admin.stats()
                    now = time.monotonic()
                    if now - started > timeout:
                        raise TimeoutError(f"the crawl did not finish within {timeout:.0f} s: {stats}")
                    if stats["frontier"].get("queued", 0) + stats["in_flight"] == 0 and stats["fetched"] > 0:
                        idle_since = idle_since or now
                        if now - idle_since >= SETTLE_SECONDS:
                            break
                    else:
                        idle_since = None
                    if watch_lag and now >= next_lag:
                        for service, lag in local_stack.lag_by_group(settings).items():
                            lags.setdefault(service, []).append(lag)
                        next_lag = time.monotonic() + LAG_EVERY_SECONDS
                    time.sleep(WATCH_EVERY_SECONDS)
                seconds = (idle_since or now) - started
            if probe is not None:
                probe("idle", parts)
            usage = sampler.stop()
            messages = topic_messages(state.bootstrap, stack_env_["TRAWL_TOPIC_PREFIX"])
            return StackCrawl(
                log=web.request_log, usage=usage, seconds_to_idle=seconds, stats=stats,
                max_lag={s: max(v) for s, v in lags.items() if v},
                mean_lag={s: sum(v) / len(v) for s, v in lags.items() if v}, messages=messages,
                idle_cpu=idle_cpu, idle_seconds=idle_seconds,
            )
        finally:
            stop_replicas(replica_processes)
