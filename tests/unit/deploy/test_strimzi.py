"""components/strimzi-topics: KafkaTopic resources valid for Strimzi's CRD schema, in step with topics.py.

The CRD's openAPIV3Schema is vendored in schemas/ (Strimzi is not installed here). Validation is
strict, as ``kubectl apply --validate=strict`` is: a property the schema does not declare is an
error, except under ``x-kubernetes-preserve-unknown-fields`` (a topic's free-form ``config``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import ALL_TOPICS
from tests.unit.deploy.manifests import TARGETS, Doc, config_data, env_values, of_kind, render

SCHEMA_FILE = Path(__file__).parent / "schemas" / "strimzi-kafkatopic-v1beta2.yaml"
CLUSTER_LABEL = "strimzi.io/cluster"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with undeclared properties refused wherever it declares properties."""
    out = copy.deepcopy(schema)

    def walk(node: dict[str, Any]) -> None:
        if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)
        for child in node.get("properties", {}).values():
            walk(child)
        if isinstance(node.get("items"), dict):
            walk(node["items"])

    walk(out)
    return out


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = strict(yaml.safe_load(SCHEMA_FILE.read_text()))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def production() -> list[Doc]:
    return render(TARGETS["production"])


def topics(docs: list[Doc]) -> dict[str, Doc]:
    return of_kind(docs, "KafkaTopic")


def test_every_kafka_topic_validates_against_the_crd_schema(production: list[Doc],
                                                            validator: jsonschema.protocols.Validator) -> None:
    assert topics(production)
    for name, doc in topics(production).items():
        assert (doc["apiVersion"], doc["kind"]) == ("kafka.strimzi.io/v1beta2", "KafkaTopic")
        errors = sorted(validator.iter_errors(doc), key=str)
        assert not errors, f"KafkaTopic/{name}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_the_validation_refuses_what_strimzi_would(validator: jsonschema.protocols.Validator) -> None:
    good = {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaTopic", "metadata": {"name": "t"},
            "spec": {"partitions": 3, "replicas": 3, "config": {"retention.ms": 1000}}}
    assert not list(validator.iter_errors(good))
    for spec in ({"partiton": 3}, {"partitions": 0}, {"partitions": "3"}, {"replicas": 40000}):
        assert list(validator.iter_errors({**good, "spec": spec})), spec


def test_there_is_one_kafka_topic_per_declared_topic_with_its_partitions(production: list[Doc]) -> None:
    prefix = config_data(production, "trawl-config").get("TRAWL_TOPIC_PREFIX", "")
    by_topic = {doc["spec"]["topicName"]: doc for doc in topics(production).values()}
    assert set(by_topic) == {prefix + t.name for t in ALL_TOPICS}
    for topic in ALL_TOPICS:
        assert by_topic[prefix + topic.name]["spec"]["partitions"] == topic.partitions, topic.name


def test_topics_belong_to_the_cluster_the_services_connect_to(production: list[Doc]) -> None:
    clusters = {doc["metadata"]["labels"][CLUSTER_LABEL] for doc in topics(production).values()}
    (cluster,) = clusters
    bootstrap = config_data(production, "trawl-config")["TRAWL_KAFKA_BOOTSTRAP"]
    assert bootstrap.split(",")[0].startswith(f"{cluster}-kafka-bootstrap"), bootstrap


def test_topic_settings_agree_with_the_producers_and_the_init_job(production: list[Doc]) -> None:
    (init,) = of_kind(production, "Job")["trawl-init"]["spec"]["template"]["spec"]["containers"]
    replication = int(env_values(production, init)["TRAWL_TOPIC_REPLICATION_FACTOR"])
    largest = KafkaSettings().max_message_bytes + 64 * 1024  # the producer's message.max.bytes
    for name, doc in topics(production).items():
        spec = doc["spec"]
        assert spec["replicas"] == replication, f"{name}: the init Job would create it with {replication} replicas"
        config = spec["config"]
        assert int(config["max.message.bytes"]) >= largest, name
        assert config["cleanup.policy"] == "delete", f"{name}: nothing may rely on compaction"
        assert int(config["min.insync.replicas"]) < spec["replicas"], f"{name}: one broker down must not stop writes"


def test_production_takes_the_database_secret_from_outside(production: list[Doc]) -> None:
    assert "trawl-database" not in of_kind(production, "Secret"), "the placeholder would overwrite the real Secret"
    assert "trawl-database" in of_kind(render(TARGETS["dev"]), "Secret")
