"""What the deployment tests share: rendering kustomize targets, picking objects, known settings."""

from __future__ import annotations

import dataclasses
import importlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.stack.init_job import InitJobSettings
from cli.stack.layout import SERVICES
from libs.common.db.settings import DatabaseSettings
from libs.common.grpc_auth import AdminAuthSettings
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings
from libs.common.settings import describe_settings

ROOT = Path(__file__).resolve().parents[3]
K8S = ROOT / "deploy" / "k8s"
TARGETS = {"base": K8S, "dev": K8S / "overlays" / "dev", "production": K8S / "overlays" / "production"}
IMAGE = "ghcr.io/trawl-crawler/trawl:0.1.0"
NAMESPACE = "trawl"
Doc = dict[str, Any]


def known_settings() -> set[str]:
    """Env names of every setting: the shared classes, the init job's, and each service's."""
    classes: list[type[Any]] = [KafkaSettings, DatabaseSettings, RuntimeSettings, InitJobSettings, AdminAuthSettings]
    for service in SERVICES:
        module = importlib.import_module(f"services.{service}.settings")
        classes += [c for c in vars(module).values()
                    if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == module.__name__]
    return {env for cls in classes for env, _, _ in describe_settings(cls)}


def kubectl() -> str:
    found = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
    if found is None:
        pytest.fail("kubectl is not installed: run scripts/bootstrap.sh (it installs Debian's kubectl)")
    return found


def render(target: Path) -> list[Doc]:
    done = subprocess.run([kubectl(), "kustomize", str(target)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl kustomize {target.relative_to(ROOT)} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def of_kind(docs: list[Doc], kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def workloads(docs: list[Doc]) -> Iterator[Doc]:
    yield from (d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job"))


def config_data(docs: list[Doc], name: str) -> dict[str, str]:
    data: dict[str, str] = of_kind(docs, "ConfigMap")[name].get("data", {})
    return data


def container_env_names(docs: list[Doc], container: Doc) -> set[str]:
    names = {e["name"] for e in container.get("env", [])}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            names |= set(config_data(docs, source["configMapRef"]["name"]))
    return names


def env_values(docs: list[Doc], container: Doc) -> dict[str, str]:
    """Plain env values of a container: its ConfigMaps, then its own ``env`` (which wins)."""
    values: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            values.update(config_data(docs, source["configMapRef"]["name"]))
    values.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
    return values


def pod_bounds(docs: list[Doc], deployment: str) -> tuple[int, int]:
    """The fewest and the most pods a Deployment runs: its autoscaler's bounds, else its replicas."""
    for hpa in of_kind(docs, "HorizontalPodAutoscaler").values():
        if hpa["spec"]["scaleTargetRef"]["name"] == deployment:
            return int(hpa["spec"]["minReplicas"]), int(hpa["spec"]["maxReplicas"])
    replicas = int(of_kind(docs, "Deployment")[deployment]["spec"].get("replicas", 1))
    return replicas, replicas
