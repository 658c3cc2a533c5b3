"""deploy/k8s: renders with kustomize, validates against the Kubernetes 1.31 schemas, follows the rules.

The rules: every service of the local stack has a Deployment of its name, with native gRPC
probes on the standard health service, a non-root read-only pod, requests and limits, a grace
period longer than the drain, and only env names that some settings class defines.
"""

from __future__ import annotations

import dataclasses
import importlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from cli.stack.init_job import InitJobSettings
from cli.stack.layout import SERVICES
from cli.stack.local_stack import migrations_dir
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings
from libs.common.settings import describe_settings, load_settings

ROOT = Path(__file__).resolve().parents[3]
K8S = ROOT / "deploy" / "k8s"
TARGETS = {"base": K8S, "local": K8S / "overlays" / "local"}
IMAGE = "ghcr.io/trawl-crawler/trawl:0.1.0"
KUBERNETES_VERSION = "1.31.0"
NAMESPACE = "trawl"
REPLICATED = ("fetcher", "extractor", "dedup")
Doc = dict[str, Any]


def known_settings() -> set[str]:
    """Env names of every setting: the shared classes, the init job's, and each service's."""
    classes: list[type[Any]] = [KafkaSettings, DatabaseSettings, RuntimeSettings, InitJobSettings]
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


@pytest.fixture(scope="module", params=sorted(TARGETS))
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    return render(TARGETS[request.param])


@pytest.fixture(scope="module")
def local_docs() -> list[Doc]:
    return render(TARGETS["local"])


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
        names |= set(config_data(docs, source["configMapRef"]["name"]))
    return names


def test_every_document_validates_strictly(docs: list[Doc]) -> None:
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {exc}")


def test_everything_lives_in_the_trawl_namespace(docs: list[Doc]) -> None:
    assert NAMESPACE in of_kind(docs, "Namespace")
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{doc['kind']}/{doc['metadata']['name']}"


def test_every_service_has_its_account_deployment_and_service(docs: list[Doc]) -> None:
    deployments = of_kind(docs, "Deployment")
    services = of_kind(docs, "Service")
    accounts = of_kind(docs, "ServiceAccount")
    assert set(deployments) == set(SERVICES)
    for name in SERVICES:
        pod = deployments[name]["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == name and name in accounts
        assert accounts[name]["automountServiceAccountToken"] is False
        (container,) = pod["containers"]
        assert container["image"] == IMAGE
        assert container["args"] == [f"services.{name}"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports == {"grpc": 50051, "metrics": 9100}
        service = services[name]
        pod_labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert {(p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {(50051, "grpc"), (9100, "metrics")}


def test_deployments_probe_the_grpc_health_service(docs: list[Doc]) -> None:
    for name, deployment in of_kind(docs, "Deployment").items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == 50051, f"{name}: {probe}"


def test_deployments_have_resources_and_a_grace_period_longer_than_the_drain(docs: list[Doc]) -> None:
    config = config_data(docs, "trawl-config")
    drain = load_settings(RuntimeSettings, config).drain_seconds
    for name, deployment in of_kind(docs, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] > drain, name
        for container in pod["containers"]:
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{name}: {bound}"


def test_every_pod_is_non_root_and_locked_down(docs: list[Doc]) -> None:
    for workload in workloads(docs):
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod.get("automountServiceAccountToken") is False, name
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            assert ":" in container["image"] and not container["image"].endswith(":latest"), name
            if container["image"] == IMAGE:
                assert security["readOnlyRootFilesystem"] is True, name
                assert pod["securityContext"]["runAsUser"] == 10001, name  # the Dockerfile's user


def test_env_names_are_known_settings(docs: list[Doc]) -> None:
    known = known_settings()
    for workload in workloads(docs):
        for container in workload["spec"]["template"]["spec"]["containers"]:
            if container["image"] != IMAGE:
                continue
            names = container_env_names(docs, container)
            unknown = sorted(n for n in names if n not in known)
            assert not unknown, f"{workload['metadata']['name']}: {unknown} are not settings of any settings class"


def test_services_that_own_a_schema_get_the_database_url(docs: list[Doc]) -> None:
    for name, deployment in of_kind(docs, "Deployment").items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert ("TRAWL_DATABASE_URL" in container_env_names(docs, container)) == migrations_dir(name).is_dir(), name


def test_init_job_creates_topics_and_migrates(docs: list[Doc]) -> None:
    job = of_kind(docs, "Job")["trawl-init"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == ["cli.stack.init_job"]
    env = container_env_names(docs, container)
    assert {"TRAWL_KAFKA_BOOTSTRAP", "TRAWL_DATABASE_URL", "TRAWL_TOPIC_PREFIX"} <= env
    importlib.import_module("cli.stack.init_job")


def test_replicated_services_have_disruption_budgets(docs: list[Doc]) -> None:
    budgets, deployments = of_kind(docs, "PodDisruptionBudget"), of_kind(docs, "Deployment")
    assert set(budgets) == set(REPLICATED)
    for name in REPLICATED:
        labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
        assert budgets[name]["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert deployments[name]["spec"]["replicas"] >= 2


def test_base_brings_no_kafka_or_postgres() -> None:
    assert not of_kind(render(TARGETS["base"]), "StatefulSet")


def test_local_overlay_is_self_contained(local_docs: list[Doc]) -> None:
    statefulsets, services = of_kind(local_docs, "StatefulSet"), of_kind(local_docs, "Service")
    assert set(statefulsets) == {"kafka", "postgres"}
    bootstrap = config_data(local_docs, "trawl-config")["TRAWL_KAFKA_BOOTSTRAP"]
    host, port = bootstrap.split(":")
    assert port == "9092" and host in services
    assert 9092 in {p["port"] for p in services[host]["spec"]["ports"]}
    dsn = urlsplit(of_kind(local_docs, "Secret")["trawl-database"]["stringData"]["TRAWL_DATABASE_URL"])
    assert dsn.hostname in services and dsn.port == 5432 and dsn.path == "/trawl"
    password = of_kind(local_docs, "Secret")["trawl-postgres"]["stringData"]["POSTGRES_PASSWORD"]
    assert dsn.password == password, "the database URL must carry the component's PostgreSQL password"
    (kafka,) = statefulsets["kafka"]["spec"]["template"]["spec"]["containers"]
    kafka_env = {e["name"]: e.get("value") for e in kafka["env"]}
    assert kafka_env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{bootstrap}"
    assert kafka_env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
