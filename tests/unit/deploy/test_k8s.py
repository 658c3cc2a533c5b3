"""deploy/k8s: every target renders with kustomize, validates against the Kubernetes 1.31 schemas, follows the rules.

Targets: the base, the dev overlay (self-contained, small) and the production overlay (Strimzi
topics, external database). The rules: every service of the local stack has a Deployment of its
name, with native gRPC probes on the standard health service, a non-root read-only pod, requests
and limits, a grace period longer than the drain, and only env names that some settings class
defines; fetchers and extractors are autoscaled, and no service runs more pods than its input
topics have partitions.
"""

from __future__ import annotations

import importlib
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from cli.stack.layout import SERVICES
from cli.stack.local_stack import GROUPS, migrations_dir
from libs.common.service import RuntimeSettings
from libs.common.settings import load_settings
from libs.common.topics import BY_NAME
from tests.unit.deploy.manifests import (
    IMAGE,
    NAMESPACE,
    TARGETS,
    Doc,
    config_data,
    container_env_names,
    known_settings,
    of_kind,
    pod_bounds,
    render,
    workloads,
)

KUBERNETES_VERSION = "1.31.0"
REPLICATED = ("fetcher", "extractor", "dedup", "importance")
AUTOSCALED = ("fetcher", "extractor")
CUSTOM_KINDS = ("KafkaTopic",)  # validated against their own schemas (test_strimzi.py)


@pytest.fixture(scope="module", params=sorted(TARGETS))
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    return render(TARGETS[request.param])


@pytest.fixture(scope="module")
def dev_docs() -> list[Doc]:
    return render(TARGETS["dev"])


def test_every_document_validates_strictly(docs: list[Doc]) -> None:
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
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
        assert budgets[name]["spec"]["maxUnavailable"] == 1


def test_replicated_services_run_two_pods_or_more_outside_dev() -> None:
    for target in ("base", "production"):
        docs = render(TARGETS[target])
        for name in REPLICATED:
            assert pod_bounds(docs, name)[0] >= 2, f"{target}: {name}"


def test_fetchers_and_extractors_scale_with_an_autoscaler_that_owns_their_replicas(docs: list[Doc]) -> None:
    autoscalers = of_kind(docs, "HorizontalPodAutoscaler")
    assert {h["spec"]["scaleTargetRef"]["name"] for h in autoscalers.values()} == set(AUTOSCALED)
    deployments = of_kind(docs, "Deployment")
    for hpa in autoscalers.values():
        target = hpa["spec"]["scaleTargetRef"]
        assert (target["apiVersion"], target["kind"]) == ("apps/v1", "Deployment")
        assert "replicas" not in deployments[target["name"]]["spec"], "an apply would reset the autoscaler's choice"
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 300  # each change rebalances
        (container,) = deployments[target["name"]]["spec"]["template"]["spec"]["containers"]
        for metric in hpa["spec"]["metrics"]:
            assert metric["resource"]["name"] in container["resources"]["requests"], "utilization needs a request"


def test_no_service_runs_more_pods_than_its_input_topics_have_partitions(docs: list[Doc]) -> None:
    """A consumer group gives each partition to one member: pods beyond the partition count idle."""
    for name in SERVICES:
        _group, topics = GROUPS[name]
        partitions = min(BY_NAME[t].partitions for t in topics)
        _fewest, most = pod_bounds(docs, name)
        assert most <= partitions, f"{name}: more pods than the {partitions} partitions of {topics}"


def test_only_the_services_with_a_guarded_api_get_the_admin_token_and_it_is_optional(docs: list[Doc]) -> None:
    # The scheduler's admin API and the link base's API; the others serve health and reflection only.
    for name, deployment in of_kind(docs, "Deployment").items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        refs = [e["valueFrom"]["secretKeyRef"] for e in container.get("env", [])
                if e["name"] == "TRAWL_ADMIN_TOKEN" and "secretKeyRef" in e.get("valueFrom", {})]
        if name in ("scheduler", "linkbase"):
            assert refs == [{"name": "trawl-admin", "key": "TRAWL_ADMIN_TOKEN", "optional": True}]
        else:
            assert refs == [], name


def test_base_brings_no_kafka_or_postgres() -> None:
    assert not of_kind(render(TARGETS["base"]), "StatefulSet")


def test_dev_overlay_is_self_contained(dev_docs: list[Doc]) -> None:
    statefulsets, services = of_kind(dev_docs, "StatefulSet"), of_kind(dev_docs, "Service")
    assert set(statefulsets) == {"kafka", "postgres"}
    bootstrap = config_data(dev_docs, "trawl-config")["TRAWL_KAFKA_BOOTSTRAP"]
    host, port = bootstrap.split(":")
    assert port == "9092" and host in services
    assert 9092 in {p["port"] for p in services[host]["spec"]["ports"]}
    dsn = urlsplit(of_kind(dev_docs, "Secret")["trawl-database"]["stringData"]["TRAWL_DATABASE_URL"])
    assert dsn.hostname in services and dsn.port == 5432 and dsn.path == "/trawl"
    password = of_kind(dev_docs, "Secret")["trawl-postgres"]["stringData"]["POSTGRES_PASSWORD"]
    assert dsn.password == password, "the database URL must carry the component's PostgreSQL password"
    (kafka,) = statefulsets["kafka"]["spec"]["template"]["spec"]["containers"]
    kafka_env = {e["name"]: e.get("value") for e in kafka["env"]}
    assert kafka_env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{bootstrap}"
    assert kafka_env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
