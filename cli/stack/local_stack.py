"""``trawl up`` / ``down`` / ``status``: the whole stack on one machine, no Docker.

``up`` starts (or reuses) the broker and PostgreSQL, creates the topics with their declared
partition counts, migrates every service's schema, writes ``stack.json`` and starts the
supervisor, which runs the six services. A configured ``TRAWL_DATABASE_URL`` or
``TRAWL_KAFKA_BOOTSTRAP`` is used instead of starting a server. Everything is safe to run
twice: a running part is reused, a stopped one is started.

The admin token, which guards every service's gRPC API (the scheduler's admin API, the link
base's API), is the file ``admin-token`` in the stack's home (mode 0600), made on the first
``up`` (random, or ``TRAWL_ADMIN_TOKEN`` if set then); every service reads it through
``TRAWL_ADMIN_TOKEN_FILE`` and the CLI reads it to call the local stack. The token itself is
never written to ``stack.json``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cli.admin_client import AdminClient
from cli.stack import health
from cli.stack.layout import SERVICES, StackSettings, StackState, logs_dir, run_dir, state_path
from libs.common.db.migrations import apply_migrations
from libs.common.settings import load_settings
from libs.common.topics import ALL_TOPICS, INPUTS
from libs.localinfra import procs
from libs.localinfra.broker import LocalBroker
from libs.localinfra.osuser import server_user
from libs.localinfra.postgres import LocalPostgres
from libs.localinfra.topics import create_topics
from services.dedup.settings import DedupSettings
from services.extractor.settings import ExtractorSettings
from services.fetcher.settings import FetcherSettings
from services.importance.settings import ImportanceSettings
from services.linkbase.settings import LinkbaseSettings
from services.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)
PG_USER = "trawl-pg"
ROOT = Path(__file__).resolve().parents[2]
STACK_KEYS = {"TRAWL_HOME", "TRAWL_LOCAL_BROKER_PORT", "TRAWL_LOCAL_POSTGRES_PORT", "TRAWL_LOCAL_GRPC_BASE_PORT",
              "TRAWL_LOCAL_METRICS_BASE_PORT", "TRAWL_ADMIN_TOKEN", "TRAWL_ADMIN_TOKEN_FILE"}


def admin_token_path(settings: StackSettings) -> Path:
    return settings.root / "admin-token"


def ensure_admin_token(settings: StackSettings, env: Mapping[str, str]) -> Path:
    """The stack's admin token file, made on first use (``TRAWL_ADMIN_TOKEN``, or a random token)."""
    path = admin_token_path(settings)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        token = env.get("TRAWL_ADMIN_TOKEN", "").strip() or secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
    return path


def admin_token(settings: StackSettings) -> str | None:
    """The local stack's admin token (None before the first ``up``)."""
    path = admin_token_path(settings)
    if not path.exists():
        return None
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return lines[0] if lines else None


def admin_client(settings: StackSettings, state: StackState, timeout: float = 10.0) -> AdminClient:
    """A client of the local stack's admin API, with its token."""
    return AdminClient(f"127.0.0.1:{state.grpc_ports['scheduler']}", timeout, token=admin_token(settings))


def migrations_dir(service: str) -> Path:
    return ROOT / "services" / service / "migrations"


def migrate_all(dsn: str) -> dict[str, list[int]]:
    applied = {}
    for service in SERVICES:
        folder = migrations_dir(service)
        if folder.is_dir():
            applied[service] = apply_migrations(dsn, service, folder)
    return applied


def _broker(settings: StackSettings) -> LocalBroker:
    return LocalBroker(settings.root / "broker", settings.broker_port)


LOCAL_BROKER_ENV = {"TRAWL_KAFKA_FETCH_WAIT_MAX_MS": "500"}
"""What the services get on the stack's own broker unless configured otherwise. Empty fetches are most of
what the local broker spends: it answers a held fetch some tens of ms after data comes rather than at once,
and each costs it as much with nothing to return. So the stages off the fetch loop (extractor, dedup, link
base, importance) wait 500 ms instead of 100 (a Kafka cluster's default here), which takes the idle broker
from about 118 to 76 ms of CPU a second; the fetch loop's two consumers keep 100 ms
(``TRAWL_KAFKA_LOOP_FETCH_WAIT_MAX_MS``): the local broker answers a held fetch some 50 ms (median) after
data comes at a 500 ms wait, 16 ms at 100, and a host's next request waits for both hops."""


def _postgres(settings: StackSettings, database: str = "trawl") -> LocalPostgres:
    """The server's data folder lives in the stack home when the server's OS user can reach it,
    else under /var/tmp (a home under /root, mode 0700, is out of its reach)."""
    data = settings.root / "postgres"
    if not server_user(PG_USER).can_reach(settings.root):
        digest = hashlib.sha1(str(settings.root).encode()).hexdigest()[:12]
        data = Path("/var/tmp") / f"trawl-{digest}" / "postgres"
        data.parent.mkdir(parents=True, exist_ok=True)
        data.parent.chmod(0o755)
    return LocalPostgres(data, settings.postgres_port, os_user=PG_USER, database=database)


def supervisor_pid(settings: StackSettings) -> int | None:
    pid = procs.read_pid(run_dir(settings) / "supervisor.pid")
    return pid if pid is not None and procs.pid_alive(pid) else None


def up(settings: StackSettings, env: Mapping[str, str], extra_env: Mapping[str, str] | None = None,
       wait_healthy: float = 90.0, database: str = "trawl") -> StackState:
    root = settings.root
    for folder in (root, logs_dir(settings), run_dir(settings)):
        folder.mkdir(parents=True, exist_ok=True)
    bootstrap = env.get("TRAWL_KAFKA_BOOTSTRAP") or _broker(settings).ensure_started()
    dsn = env.get("TRAWL_DATABASE_URL") or _postgres(settings, database).ensure_started()
    prefix = env.get("TRAWL_TOPIC_PREFIX", "")
    create_topics(bootstrap, [(prefix + t.name, t.partitions) for t in ALL_TOPICS])
    migrate_all(dsn)
    token_file = ensure_admin_token(settings, env)
    passthrough = {k: v for k, v in env.items() if k.startswith("TRAWL_") and k not in STACK_KEYS}
    state = StackState(
        bootstrap=bootstrap, dsn=dsn, topic_prefix=prefix,
        managed_broker="TRAWL_KAFKA_BOOTSTRAP" not in env, managed_postgres="TRAWL_DATABASE_URL" not in env,
    )
    for service in SERVICES:
        state.grpc_ports[service] = settings.grpc_port(service)
        state.services[service] = {
            **passthrough,
            **(extra_env or {}),
            "TRAWL_KAFKA_BOOTSTRAP": bootstrap,
            "TRAWL_DATABASE_URL": dsn,
            "TRAWL_TOPIC_PREFIX": prefix,
            "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{settings.grpc_port(service)}",
            "TRAWL_METRICS_PORT": str(settings.metrics_port(service)),
            "TRAWL_ADMIN_TOKEN_FILE": str(token_file),  # one token for every service's gRPC API
        }
    # Every response is archived under the stack's home unless a folder is configured.
    state.services["fetcher"].setdefault("TRAWL_FETCHER_WARC_DIR", str(root / "warc"))
    if state.managed_broker:
        for service_env in state.services.values():
            for key, value in LOCAL_BROKER_ENV.items():
                service_env.setdefault(key, value)
    state.save(state_path(settings))
    if supervisor_pid(settings) is None:
        with open(logs_dir(settings) / "supervisor.log", "ab") as out:
            subprocess.Popen(
                [sys.executable, "-m", "cli.stack.supervisor", str(root)], cwd=ROOT, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
    deadline = time.monotonic() + wait_healthy
    while time.monotonic() < deadline:
        if all(h == "SERVING" for h in service_health(state).values()):
            break
        time.sleep(0.5)
    else:
        bad = {k: v for k, v in service_health(state).items() if v != "SERVING"}
        raise RuntimeError(f"services not healthy after {wait_healthy}s: {bad}; see {logs_dir(settings)}")
    return state


def service_health(state: StackState) -> dict[str, str]:
    return {s: health.check(f"127.0.0.1:{port}") for s, port in state.grpc_ports.items()}


def stop_services(settings: StackSettings, timeout: float = 60.0) -> bool:
    """Stops the supervisor and with it the services (each drains on SIGTERM)."""
    pid = supervisor_pid(settings)
    if pid is None:
        return False
    procs.terminate(pid, timeout)
    return True


def ensure_postgres(settings: StackSettings, env: Mapping[str, str]) -> str:
    """The admin DSN (database ``postgres``) of the configured or local server."""
    configured = env.get("TRAWL_DATABASE_URL")
    if configured:
        from libs.localinfra.pgadmin import dsn_with_database

        return dsn_with_database(configured, "postgres")
    pg = _postgres(settings)
    pg.ensure_started()
    return pg.dsn("postgres")


def down(settings: StackSettings, timeout: float = 60.0) -> list[str]:
    """Stops the services (drained), then the broker and PostgreSQL this stack started."""
    stopped = []
    if stop_services(settings, timeout):
        stopped.append("services")
    state = StackState.load(state_path(settings))
    if state is None or state.managed_broker:
        broker = _broker(settings)
        if broker.is_running():
            broker.stop()
            stopped.append("broker")
    if state is None or state.managed_postgres:
        pg = _postgres(settings)
        if pg.is_running():
            pg.stop()
            stopped.append("postgres")
    return stopped


@dataclass(frozen=True)
class PartStatus:
    name: str
    pid: int | None
    address: str
    health: str


def status(settings: StackSettings) -> list[PartStatus]:
    state = StackState.load(state_path(settings))
    broker, pg = _broker(settings), _postgres(settings)
    parts = [
        PartStatus("broker", broker.pid(), state.bootstrap if state else broker.bootstrap,
                   "SERVING" if broker.is_running() else "STOPPED"),
        PartStatus("postgres", pg.pid(), state.dsn if state else pg.dsn(),
                   "SERVING" if pg.is_running() else "STOPPED"),
        PartStatus("supervisor", supervisor_pid(settings), str(settings.root), "SERVING"
                   if supervisor_pid(settings) else "STOPPED"),
    ]
    if state is not None:
        running = supervisor_pid(settings) is not None
        for service, port in state.grpc_ports.items():
            address = f"127.0.0.1:{port}"
            pid = procs.read_pid(run_dir(settings) / f"{service}.pid")
            alive = pid if pid is not None and procs.pid_alive(pid) else None
            parts.append(PartStatus(service, alive, address, health.check(address) if running else "STOPPED"))
    return parts


_GROUP_IDS: dict[str, str] = {
    "scheduler": load_settings(SchedulerSettings, os.environ).group_id,
    "linkbase": load_settings(LinkbaseSettings, os.environ).group_id,
    "fetcher": load_settings(FetcherSettings, os.environ).group_id,
    "extractor": load_settings(ExtractorSettings, os.environ).group_id,
    "dedup": load_settings(DedupSettings, os.environ).group_id,
    "importance": load_settings(ImportanceSettings, os.environ).group_id,
}
"""Each service's consumer group, as its settings declare it (``TRAWL_<SERVICE>_GROUP``)."""


GROUPS: dict[str, tuple[str, list[str]]] = {
    service: (_GROUP_IDS[service], [t.name for t in INPUTS[service]]) for service in SERVICES
}
"""Each service's consumer group and the topics it consumes, from the services' own declarations."""


def lag_by_group(settings: StackSettings) -> dict[str, int]:
    """Total consumer lag of each service's group (clamped at zero per partition)."""
    from libs.common.kafka.lag import group_lag

    state = StackState.load(state_path(settings))
    if state is None or (not _broker(settings).is_running() and state.managed_broker):
        return {}
    out = {}
    for service, (group, topics) in GROUPS.items():
        try:
            lags = group_lag(state.bootstrap, group, [state.topic_prefix + t for t in topics], timeout=3.0)
        except Exception:  # the broker may be going away: status still prints the rest
            continue
        out[service] = sum(p.lag for p in lags)
    return out
