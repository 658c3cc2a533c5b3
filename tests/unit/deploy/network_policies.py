"""Reading rendered NetworkPolicies: whether a connection from a given pod to a given port is let in.

The ingress rules of ``networking.k8s.io/v1`` as Kubernetes defines them: a pod that no policy
of type Ingress selects takes every connection; a selected pod takes a connection that some
rule of a policy selecting it allows (a rule with no ``ports`` allows every port, with no
``from`` every peer). A peer's ``podSelector`` alone means pods of the policy's own namespace,
``namespaceSelector`` alone every pod of the matching namespaces, both together the matching
pods of the matching namespaces. ``ipBlock`` peers name addresses, not pods: they match no
:class:`Pod` here, and the tests refuse them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    """A pod that opens a connection: its labels and its namespace's name and labels."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] = field(default_factory=dict)

    def namespace_label_set(self) -> dict[str, str]:
        return {**self.namespace_labels, "kubernetes.io/metadata.name": self.namespace}


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a label selector (``matchLabels``, ``matchExpressions``) selects ``labels``; {} selects all."""
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def peer_admits(peer: Mapping[str, Any], policy_namespace: str, source: Pod) -> bool:
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], source.namespace_label_set()):
            return False
    elif source.namespace != policy_namespace:
        return False
    return selects(peer.get("podSelector", {}), source.labels)


def port_matches(rule_port: Mapping[str, Any], number: int, name: str) -> bool:
    if rule_port.get("protocol", "TCP") != "TCP":
        return False
    port = rule_port.get("port")
    if port is None:
        return True
    if isinstance(port, str):
        return port == name
    return int(port) <= number <= int(rule_port.get("endPort", port))


def ingress_policies(policies: Iterable[Doc], namespace: str, pod_labels: Mapping[str, str]) -> list[Doc]:
    """The policies of type Ingress that select a pod of ``namespace`` with ``pod_labels``."""
    return [
        p for p in policies
        if p["metadata"].get("namespace") == namespace
        and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        and selects(p["spec"].get("podSelector", {}), pod_labels)
    ]


def admitted(
    policies: Iterable[Doc], namespace: str, pod_labels: Mapping[str, str], number: int, name: str, source: Pod
) -> bool:
    """Whether ``source`` may connect to TCP port ``number`` (container port ``name``) of the pod."""
    selecting = ingress_policies(policies, namespace, pod_labels)
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress", []):
            ports = rule.get("ports", [])
            if ports and not any(port_matches(p, number, name) for p in ports):
                continue
            peers = rule.get("from", [])
            if not peers or any(peer_admits(peer, namespace, source) for peer in peers):
                return True
    return False


def opening_rules(
    policies: Iterable[Doc], namespace: str, pod_labels: Mapping[str, str], number: int, name: str
) -> list[Doc]:
    """The ingress rules of the pod's policies that name this port explicitly."""
    return [
        rule
        for policy in ingress_policies(policies, namespace, pod_labels)
        for rule in policy["spec"].get("ingress", [])
        if any(p.get("port") is not None and port_matches(p, number, name) for p in rule.get("ports", []))
    ]
