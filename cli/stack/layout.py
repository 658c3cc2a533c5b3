"""Where the local stack keeps its state and which ports its parts listen on."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from libs.common.settings import setting

SERVICES: tuple[str, ...] = ("scheduler", "linkbase", "fetcher", "extractor", "dedup", "importance")


@dataclass(frozen=True)
class StackSettings:
    home: str = setting("TRAWL_HOME", ".trawl", "Folder of the local stack: broker, database, logs, pid files.")
    broker_port: int = setting("TRAWL_LOCAL_BROKER_PORT", 19092, "Port of the local Kafka-compatible broker.")
    postgres_port: int = setting("TRAWL_LOCAL_POSTGRES_PORT", 15432, "Port of the local PostgreSQL server.")
    grpc_base_port: int = setting(
        "TRAWL_LOCAL_GRPC_BASE_PORT",
        17151,
        "gRPC port of the first service (scheduler: admin API); others follow. Below the kernel's ephemeral"
        " range (32768+), so an outgoing connection never holds it.",
    )
    metrics_base_port: int = setting(
        "TRAWL_LOCAL_METRICS_BASE_PORT", 9151, "Metrics port of the first service; others follow (0: off)."
    )

    @property
    def root(self) -> Path:
        return Path(self.home).absolute()

    def grpc_port(self, service: str) -> int:
        return self.grpc_base_port + SERVICES.index(service)

    def metrics_port(self, service: str) -> int:
        return 0 if self.metrics_base_port == 0 else self.metrics_base_port + SERVICES.index(service)


@dataclass
class StackState:
    """What ``up`` started, written to ``<home>/stack.json`` for ``status`` and ``down``."""

    bootstrap: str
    dsn: str
    topic_prefix: str
    services: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> env
    grpc_ports: dict[str, int] = field(default_factory=dict)
    managed_broker: bool = True
    managed_postgres: bool = True

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> StackState | None:
        if not path.exists():
            return None
        return cls(**json.loads(path.read_text()))


def state_path(settings: StackSettings) -> Path:
    return settings.root / "stack.json"


def logs_dir(settings: StackSettings) -> Path:
    return settings.root / "logs"


def run_dir(settings: StackSettings) -> Path:
    return settings.root / "run"
