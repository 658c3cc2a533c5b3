"""Runs the six services as real processes against the test broker, database and a simulated web."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import psycopg

from cli.admin_client import AdminClient
from cli.simweb_thread import BackgroundSimWeb
from cli.stack import health
from cli.stack.layout import SERVICES
from cli.stack.processes import ServiceProcess
from libs.common.topics import ALL_TOPICS
from libs.localinfra.ports import free_port
from libs.localinfra.topics import create_topics
from libs.simweb import SimWeb, SimWebConfig

SMALL_WEB = SimWebConfig(
    seed=11, hosts=12, pages=320, host_size_exponent=0.3, crawl_delay_values=(0.1, 0.2), hub_host_ratio=0.0,
)
FAST_POLITENESS = {
    "TRAWL_FETCHER_MIN_DELAY": "0.05",
    "TRAWL_FETCHER_RESPONSE_TIME_FACTOR": "2",
    "TRAWL_FETCHER_CONCURRENCY": "50",
    "TRAWL_SCHEDULER_MAX_IN_FLIGHT": "50",
    "TRAWL_SCHEDULER_RETRY_BASE_SECONDS": "0.5",
    "TRAWL_LOG_LEVEL": "INFO",
}
ADMIN_TOKEN = "e2e-admin-token"


class CrawlStack:
    def __init__(self, bootstrap: str, dsn: str, prefix: str, proxy: str, logs: Path,
                 env: dict[str, str | None] | None = None) -> None:
        """``env`` changes the services' settings: a value replaces the harness's, None removes it (the default)."""
        self.dsn = dsn
        self.bootstrap = bootstrap
        self.prefix = prefix
        self.ports = {name: free_port() for name in SERVICES}
        base = {
            **FAST_POLITENESS,
            "TRAWL_KAFKA_BOOTSTRAP": bootstrap,
            "TRAWL_DATABASE_URL": dsn,
            "TRAWL_TOPIC_PREFIX": prefix,
            "TRAWL_FETCHER_PROXY": proxy,
            **{f"TRAWL_{name.upper()}_GROUP": group for name, group in self.groups(prefix).items()},
            "TRAWL_ADMIN_TOKEN": ADMIN_TOKEN,
        }
        for name, value in (env or {}).items():
            if value is None:
                base.pop(name, None)
            else:
                base[name] = value
        self.processes = {
            name: ServiceProcess(name, {**base, "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{self.ports[name]}"},
                                 logs / f"{name}.log")
            for name in SERVICES
        }
        create_topics(bootstrap, [(prefix + t.name, t.partitions) for t in ALL_TOPICS])

    @staticmethod
    def groups(prefix: str) -> dict[str, str]:
        """Each service's consumer group: named with the crawl's prefix, so crawls never share a group."""
        return {name: f"{prefix}{name}" for name in SERVICES}

    def start(self, names: tuple[str, ...] = SERVICES, timeout: float = 60.0) -> None:
        for name in names:
            self.processes[name].start()
        deadline = time.monotonic() + timeout
        for name in names:
            while health.check(f"127.0.0.1:{self.ports[name]}") != "SERVING":
                assert self.processes[name].alive(), f"{name} exited: see {self.processes[name].log_path}"
                assert time.monotonic() < deadline, f"{name} not serving within {timeout}s"
                time.sleep(0.2)

    def stop(self, names: tuple[str, ...] = SERVICES) -> None:
        for name in names:
            self.processes[name].stop(timeout=30)

    def admin(self) -> AdminClient:
        return AdminClient(f"127.0.0.1:{self.ports['scheduler']}", token=ADMIN_TOKEN)

    def wait_until_done(self, timeout: float = 240.0, settle: float = 3.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        idle_since: float | None = None
        with self.admin() as admin:
            while True:
                try:
                    stats = admin.stats()
                except grpc.RpcError:  # the scheduler is restarting, or its database is away
                    assert time.monotonic() < deadline, f"crawl not done within {timeout}s: scheduler unreachable"
                    idle_since = None
                    time.sleep(0.5)
                    continue
                busy = stats["frontier"].get("queued", 0) + stats["in_flight"]
                now = time.monotonic()
                if busy == 0 and stats["fetched"] > 0:
                    idle_since = idle_since or now
                    if now - idle_since >= settle:
                        return stats
                else:
                    idle_since = None
                assert now < deadline, f"crawl not done within {timeout}s: {stats}"
                time.sleep(0.25)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(sql.encode(), args).fetchall()


@contextmanager
def crawl_stack(bootstrap: str, dsn: str, prefix: str, logs: Path,
                config: SimWebConfig | SimWeb = SMALL_WEB, env: dict[str, str | None] | None = None,
                ) -> Iterator[tuple[CrawlStack, BackgroundSimWeb, SimWeb]]:
    """A stack and a served web: ``config``'s, or ``config`` itself when it is a built web.

    The server's request log is also written to ``logs/simweb-requests.jsonl``, beside the services' logs.
    """
    from libs.simweb import build_web

    web = config if isinstance(config, SimWeb) else build_web(config)
    simweb = BackgroundSimWeb(web, log_file=logs / "simweb-requests.jsonl")
    proxy = simweb.start()
    stack = CrawlStack(bootstrap, dsn, prefix, proxy, logs, env)
    try:
        yield stack, simweb, web
    finally:
        stack.stop()
        simweb.stop()
