"""deploy/k8s: NetworkPolicies deny ingress by default and open each Service port to its clients only.

Read from each rendered target (base, dev, production) by the rules of ``networking.k8s.io/v1``
(``network_policies.py``): every pod of the namespace is under a default deny, every port a
Service exposes is opened by some policy, and each port admits exactly the clients meant for it
among the namespace's own pods and a few outsiders: the gRPC ports (the admin API, the link
base's API, health and reflection) operators' tools only, since no Trawl service calls another
over gRPC; metrics Prometheus only; Kafka and PostgreSQL (dev) the pods that use them.
"""

from __future__ import annotations

import pytest

from cli.stack.layout import SERVICES
from tests.unit.deploy.manifests import NAMESPACE, TARGETS, Doc, of_kind, render, workloads
from tests.unit.deploy.network_policies import Pod, admitted, ingress_policies, opening_rules, selects

OPERATOR_TOOL = "operator tool (namespace labelled trawl.io/api-access)"
LABELLED_CLIENT = "pod labelled trawl.io/api-client in the namespace"
PROMETHEUS = "prometheus (monitoring)"
KAFKA_USERS = {*SERVICES, "trawl-init", "kafka"}
POSTGRES_USERS = {"scheduler", "linkbase", "dedup", "importance", "trawl-init"}
GRPC_PORT, METRICS_PORT = 50051, 9100

# Who may connect to each (Service, port), by workload name or outsider's name.
EXPECTED: dict[tuple[str, int], set[str]] = {
    **{(service, GRPC_PORT): {OPERATOR_TOOL, LABELLED_CLIENT} for service in SERVICES},
    **{(service, METRICS_PORT): {PROMETHEUS} for service in SERVICES},
    ("kafka", 9092): KAFKA_USERS,
    ("postgres", 5432): POSTGRES_USERS,
}


def outsiders(namespace_labels: dict[str, str]) -> dict[str, Pod]:
    return {
        OPERATOR_TOOL: Pod("trawl-ops", {"app": "grpcurl"}, {"trawl.io/api-access": "true"}),
        LABELLED_CLIENT: Pod(NAMESPACE, {"trawl.io/api-client": "true"}, namespace_labels),
        PROMETHEUS: Pod("monitoring", {"app.kubernetes.io/name": "prometheus"}),
        "a pod of another namespace": Pod("default", {"app": "web"}),
        "a pod of another namespace labelled trawl.io/api-client": Pod("default", {"trawl.io/api-client": "true"}),
        "a pod of another namespace labelled prometheus": Pod("default", {"app.kubernetes.io/name": "prometheus"}),
        "an unlabelled pod of the namespace": Pod(NAMESPACE, {"run": "debug"}, namespace_labels),
    }


@pytest.fixture(scope="module", params=sorted(TARGETS))
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    return render(TARGETS[request.param])


def namespace_labels(docs: list[Doc]) -> dict[str, str]:
    labels: dict[str, str] = of_kind(docs, "Namespace")[NAMESPACE]["metadata"].get("labels", {})
    return labels


def sources(docs: list[Doc]) -> dict[str, Pod]:
    """Every workload's pods, by workload name, and the outsiders."""
    labels = namespace_labels(docs)
    pods = {w["metadata"]["name"]: Pod(NAMESPACE, w["spec"]["template"]["metadata"]["labels"], labels)
            for w in workloads(docs)}
    return {**pods, **outsiders(labels)}


def service_ports(docs: list[Doc]) -> list[tuple[str, int, dict[str, str], int, str]]:
    """(Service, port, the labels of its pods, the container port, its name) for every Service port."""
    found = []
    for name, service in of_kind(docs, "Service").items():
        selector = {"matchLabels": service["spec"]["selector"]}
        selected = [w for w in workloads(docs) if selects(selector, w["spec"]["template"]["metadata"]["labels"])]
        assert selected, f"Service {name} selects no pod"
        for workload in selected:
            labels = workload["spec"]["template"]["metadata"]["labels"]
            containers = workload["spec"]["template"]["spec"]["containers"]
            container_ports = [p for c in containers for p in c.get("ports", [])]
            for port in service["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                (container_port,) = [p for p in container_ports if target in (p.get("name"), p["containerPort"])]
                found.append((name, int(port["port"]), labels, int(container_port["containerPort"]),
                              container_port.get("name", "")))
    return found


def policies(docs: list[Doc]) -> list[Doc]:
    return list(of_kind(docs, "NetworkPolicy").values())


def test_every_pod_of_the_namespace_denies_ingress_by_default(docs: list[Doc]) -> None:
    deny = [p for p in policies(docs)
            if p["spec"]["podSelector"] == {} and p["spec"].get("policyTypes") == ["Ingress"]
            and not p["spec"].get("ingress")]
    assert [p["metadata"]["name"] for p in deny] == ["default-deny-ingress"]
    for workload in workloads(docs):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert ingress_policies(policies(docs), NAMESPACE, labels), workload["metadata"]["name"]


def test_every_service_port_is_opened_by_a_policy_to_named_peers_only(docs: list[Doc]) -> None:
    ports = service_ports(docs)
    assert {(name, port) for name, port, *_ in ports} == {key for key in EXPECTED
                                                          if key[0] in of_kind(docs, "Service")}
    for name, port, labels, number, port_name in ports:
        rules = opening_rules(policies(docs), NAMESPACE, labels, number, port_name)
        assert rules, f"no NetworkPolicy opens {name}:{port}"
        for rule in rules:
            peers = rule.get("from", [])
            assert peers, f"{name}:{port} is open to every pod of every namespace"
            for peer in peers:
                assert "ipBlock" not in peer, f"{name}:{port} is opened to addresses: {peer}"
                assert all(peer[key] for key in ("podSelector", "namespaceSelector") if key in peer), \
                    f"{name}:{port} is opened to a whole namespace or to every namespace: {peer}"


def test_each_port_admits_exactly_its_intended_clients(docs: list[Doc]) -> None:
    everyone = sources(docs)
    for name, port, labels, number, port_name in service_ports(docs):
        allowed = {who for who, pod in everyone.items()
                   if admitted(policies(docs), NAMESPACE, labels, number, port_name, pod)}
        assert allowed == EXPECTED[(name, port)], f"{name}:{port}"


def test_the_link_base_api_admits_operators_tools_and_no_trawl_service(docs: list[Doc]) -> None:
    (linkbase,) = [w for w in workloads(docs) if w["metadata"]["name"] == "linkbase"]
    labels = linkbase["spec"]["template"]["metadata"]["labels"]
    everyone = sources(docs)
    for who, pod in everyone.items():
        allowed = admitted(policies(docs), NAMESPACE, labels, GRPC_PORT, "grpc", pod)
        assert allowed == (who in (OPERATOR_TOOL, LABELLED_CLIENT)), who
    # Its other ports (metrics) do not open the API: nothing else reaches 50051.
    assert not any(admitted(policies(docs), NAMESPACE, labels, GRPC_PORT, "grpc", everyone[s]) for s in SERVICES)
