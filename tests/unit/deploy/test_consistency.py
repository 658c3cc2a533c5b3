"""The local stack, docker-compose and Kubernetes run the same thing: image, commands, ports, setting names.

The local stack (``trawl up``) starts ``python -m services.<name>`` with the environment built in
``cli/stack/local_stack.py``; docker-compose and every kustomize target run the one image, whose
entry point is ``python -m``, with the module as the command. Ports may differ on one machine (the
local stack gives each service its own), but the settings that carry them are the same.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.stack import local_stack
from cli.stack.layout import SERVICES
from cli.stack.processes import ServiceProcess
from tests.unit.deploy.manifests import IMAGE, ROOT, TARGETS, Doc, container_env_names, env_values, of_kind, render

COMPOSE = ROOT / "docker-compose.yml"
# Settings the local stack hands every service (cli/stack/local_stack.py, up()).
LOCAL_STACK_SETTINGS = {"TRAWL_KAFKA_BOOTSTRAP", "TRAWL_DATABASE_URL", "TRAWL_TOPIC_PREFIX", "TRAWL_GRPC_ADDRESS",
                        "TRAWL_METRICS_PORT"}
# Compose-only: the demo profile points the fetcher at the simulated web (deploy/compose/demo.env).
COMPOSE_ONLY = {"fetcher": {"TRAWL_FETCHER_PROXY"}}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return spec


@pytest.fixture(scope="module", params=sorted(TARGETS))
def k8s(request: pytest.FixtureRequest) -> list[Doc]:
    return render(TARGETS[request.param])


def compose_env(compose: dict[str, Any], service: str) -> dict[str, str]:
    env = compose["services"][service].get("environment") or {}
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def container(docs: list[Doc], kind: str, name: str) -> Doc:
    (found,) = of_kind(docs, kind)[name]["spec"]["template"]["spec"]["containers"]
    return found


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_the_local_stack_passes_the_settings_named_here() -> None:
    source = inspect.getsource(local_stack.up)
    for name in LOCAL_STACK_SETTINGS:
        assert f'"{name}"' in source, f"the local stack no longer sets {name}: update this test and the deployments"
    assert ServiceProcess("fetcher", {}, Path("/dev/null")).module == "services.fetcher"


def test_every_service_runs_the_same_module_from_the_same_image(compose: dict[str, Any], k8s: list[Doc]) -> None:
    for name in SERVICES:
        pod = container(k8s, "Deployment", name)
        assert compose["services"][name]["image"] == pod["image"] == IMAGE
        assert compose["services"][name]["command"] == pod["args"] == [f"services.{name}"]
        assert "command" not in pod, "the image's entry point (python -m) runs the module"
    init = container(k8s, "Job", "trawl-init")
    assert compose["services"]["init"]["command"] == init["args"] == ["cli.stack.init_job"]
    assert compose["services"]["init"]["image"] == init["image"] == IMAGE


def test_every_service_gets_the_same_setting_names(compose: dict[str, Any], k8s: list[Doc]) -> None:
    for name in SERVICES:
        in_compose = {k for k in compose_env(compose, name) if k.startswith("TRAWL_")} - COMPOSE_ONLY.get(name, set())
        in_k8s = {k for k in container_env_names(k8s, container(k8s, "Deployment", name)) if k.startswith("TRAWL_")}
        assert in_compose == in_k8s, f"{name}: compose only {in_compose - in_k8s}, k8s only {in_k8s - in_compose}"
        needs_database = local_stack.migrations_dir(name).is_dir()
        expected = LOCAL_STACK_SETTINGS - (set() if needs_database else {"TRAWL_DATABASE_URL"})
        assert expected <= in_k8s, f"{name}: the local stack sets {sorted(expected - in_k8s)}, Kubernetes does not"
    init_compose = {k for k in compose_env(compose, "init") if k.startswith("TRAWL_")}
    init_k8s = {k for k in container_env_names(k8s, container(k8s, "Job", "trawl-init")) if k.startswith("TRAWL_")}
    assert init_compose <= init_k8s, f"init: compose sets {sorted(init_compose - init_k8s)}, Kubernetes does not"


def test_ports_agree_between_settings_probes_services_and_scrapes(compose: dict[str, Any], k8s: list[Doc]) -> None:
    for name in SERVICES:
        pod = container(k8s, "Deployment", name)
        values = env_values(k8s, pod)
        grpc, metrics = port_of(values["TRAWL_GRPC_ADDRESS"]), int(values["TRAWL_METRICS_PORT"])
        ports = {p["name"]: p["containerPort"] for p in pod["ports"]}
        assert ports == {"grpc": grpc, "metrics": metrics}, name
        assert {pod[probe]["grpc"]["port"] for probe in ("startupProbe", "readinessProbe", "livenessProbe")} == {grpc}
        template = of_kind(k8s, "Deployment")[name]["spec"]["template"]
        assert template["metadata"]["annotations"]["prometheus.io/port"] == str(metrics), name

        env = compose_env(compose, name)
        assert (port_of(env["TRAWL_GRPC_ADDRESS"]), int(env["TRAWL_METRICS_PORT"])) == (grpc, metrics), name
        assert compose["services"][name]["healthcheck"]["test"][-1] == f"127.0.0.1:{grpc}", name


@pytest.mark.parametrize("service", SERVICES)
def test_status_reads_the_lag_of_every_topic_a_service_consumes(service: str) -> None:
    """``trawl status`` sums each group's lag over the topics the service declares it consumes, in the group
    its settings name (the consumer itself refuses handlers for any other topics: test_consumer_handlers)."""
    from libs.common.topics import INPUTS

    group, listed = local_stack.GROUPS[service]
    assert listed == [t.name for t in INPUTS[service]]
    settings = importlib.import_module(f"services.{service}.settings")
    defaults = {f.default for cls in vars(settings).values() if dataclasses.is_dataclass(cls)
                for f in dataclasses.fields(cls) if f.name == "group_id"}
    assert group in defaults


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_hands_its_consumer_the_declared_inputs(service: str) -> None:
    """``services/<service>/main.py`` builds its consumer with ``service="<service>"``, which ties its handlers
    to the declared inputs."""
    tree = ast.parse((ROOT / "services" / service / "main.py").read_text())
    names = [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords
             if kw.arg == "service" and isinstance(kw.value, ast.Constant)]
    assert names == [service]
