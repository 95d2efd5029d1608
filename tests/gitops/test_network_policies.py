"""The NetworkPolicies admit the flows the design has, and nothing else: evaluated here with
Kubernetes' NetworkPolicy semantics over the pods each overlay renders (plus the pods that
operators create: Istio's gateway, KServe's model servers) and pods outside the namespace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.gitops.rendering import ENVIRONMENTS, OVERLAYS, Manifest, pod_templates, render

MONITORING = "monitoring"
OUTSIDE = "somewhere-else"


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    labels: dict[str, str] = field(hash=False)
    ports: dict[str, int] = field(default_factory=dict, hash=False)


def label_selected(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels and In/NotIn/Exists/DoesNotExist)."""
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
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


def peer_admits(peer: dict[str, Any], policy_namespace: str, pod: Pod | None) -> bool:
    """Whether one `from`/`to` peer matches `pod` (None: an address outside every cluster pod)."""
    if "ipBlock" in peer:
        return pod is None  # pod traffic to an ipBlock is implementation-defined; never rely on it
    if pod is None:
        return False
    namespace_labels = {"kubernetes.io/metadata.name": pod.namespace}
    if "namespaceSelector" in peer:
        if not label_selected(peer["namespaceSelector"], namespace_labels):
            return False
    elif pod.namespace != policy_namespace:
        return False
    return label_selected(peer.get("podSelector", {}), pod.labels)


def port_admits(
    ports: list[dict[str, Any]] | None, port: int, protocol: str, target: Pod | None
) -> bool:
    if not ports:
        return True
    for entry in ports:
        if entry.get("protocol", "TCP") != protocol:
            continue
        wanted = entry.get("port")
        if wanted is None or wanted == port:
            return True
        if isinstance(wanted, str) and target is not None and target.ports.get(wanted) == port:
            return True
    return False


class Cluster:
    def __init__(self, namespace: str, policies: list[Manifest]) -> None:
        self.namespace = namespace
        self.policies = policies

    def _selecting(self, pod: Pod, direction: str) -> list[Manifest]:
        return [
            policy
            for policy in self.policies
            if pod.namespace == self.namespace
            and direction in policy["spec"].get("policyTypes", ["Ingress"])
            and label_selected(policy["spec"]["podSelector"], pod.labels)
        ]

    def _admits(
        self, pod: Pod, direction: str, other: Pod | None, port: int, protocol: str
    ) -> bool:
        policies = self._selecting(pod, direction)
        if not policies:
            return True  # not isolated in this direction
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        target = pod if direction == "Ingress" else other
        for policy in policies:
            for rule in policy["spec"].get(key, []):
                peers = rule.get(peers_key)
                if peers and not any(peer_admits(p, self.namespace, other) for p in peers):
                    continue
                if port_admits(rule.get("ports"), port, protocol, target):
                    return True
        return False

    def allows(self, source: Pod, target: Pod | None, port: int, protocol: str = "TCP") -> bool:
        egress = source.namespace != self.namespace or self._admits(
            source, "Egress", target, port, protocol
        )
        ingress = target is None or self._admits(target, "Ingress", source, port, protocol)
        return egress and ingress


def fleet_pods(manifests: list[Manifest], namespace: str) -> dict[str, Pod]:
    """One pod per workload, by its app.kubernetes.io/name, plus the operator-made pods."""
    pods: dict[str, Pod] = {}
    for manifest in manifests:
        for _, template in pod_templates(manifest):
            labels = template.get("metadata", {}).get("labels", {})
            ports = {
                port["name"]: port["containerPort"]
                for container in template["spec"]["containers"]
                for port in container.get("ports", [])
                if "name" in port
            }
            pods.setdefault(
                labels["app.kubernetes.io/name"],
                Pod(labels["app.kubernetes.io/name"], namespace, labels, ports),
            )
    gateway = {"gateway.networking.k8s.io/gateway-name": "koholint-gateway"}
    pods["gateway"] = Pod("gateway", namespace, gateway)
    for model in ("vision", "puzzle", "small"):
        pods[f"model-{model}"] = Pod(
            model, namespace, {"serving.kserve.io/inferenceservice": model}
        )
    pods["prometheus"] = Pod("prometheus", MONITORING, {"app.kubernetes.io/name": "prometheus"})
    pods["stranger"] = Pod("stranger", OUTSIDE, {"app.kubernetes.io/name": "trainer"})
    pods["dns"] = Pod("dns", "kube-system", {"k8s-app": "kube-dns"})
    return pods


SERVICES = ("env-sim", "planner", "trainer", "evaluator", "reward-model", "console")
NEEDED = [
    *[(client, "redis", 6379) for client in ("trainer", "ray", "env-sim", "evaluator", "evaluate-run", "reward-model", "console")],
    *[(client, "minio", 9000) for client in ("trainer", "ray", "env-sim", "evaluator", "evaluate-run", "reward-model", "train-reward-model", "minio-create-bucket")],
    ("trainer", "ray", 10001), ("ray", "ray", 6379), ("ray", "ray", 23456), ("trainer", "planner", 8000),
    ("ray", "planner", 8000), ("planner", "env-sim", 8000), ("planner", "gateway", 80),
    ("evaluator", "gateway", 80), ("evaluate-run", "gateway", 80),
    *[("console", service, 8000) for service in ("trainer", "env-sim", "planner", "evaluator", "reward-model")],
    *[("gateway", f"{pool}-epp", 9002) for pool in ("vision", "puzzle", "small")],
    *[("gateway", f"model-{pool}", 8000) for pool in ("vision", "puzzle", "small")],
    *[(f"{pool}-epp", f"model-{pool}", 8000) for pool in ("vision", "puzzle", "small")],
    ("gateway", "console", 8000),
    *[("prometheus", service, 8000) for service in SERVICES],
    ("prometheus", "vision-epp", 9090), ("prometheus", "model-small", 8000),
    ("stranger", "gateway", 80),
]  # fmt: skip
REFUSED = [
    *[("stranger", target, port) for target, port in (
        ("redis", 6379), ("minio", 9000), ("model-vision", 8000), ("small-epp", 9002), ("ray", 10001),
        *[(service, 8000) for service in SERVICES])],
    ("prometheus", "redis", 6379), ("prometheus", "minio", 9000), ("prometheus", "trainer", 9999),
    ("planner", "redis", 6379), ("planner", "minio", 9000), ("console", "minio", 9000),
    ("env-sim", "gateway", 80), ("gateway", "redis", 6379), ("model-vision", "redis", 6379),
    ("evaluator", "trainer", 8000), ("train-reward-model", "redis", 6379), ("env-sim", "planner", 8000),
    ("trainer", "model-vision", 8000), ("planner", "model-small", 8000),
]  # fmt: skip


def cluster_and_pods(environment: str) -> tuple[Cluster, dict[str, Pod]]:
    manifests = render(OVERLAYS[environment])
    namespace = f"koholint-{environment}"
    policies = [m for m in manifests if m["kind"] == "NetworkPolicy"]
    return Cluster(namespace, policies), fleet_pods(manifests, namespace)


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_policies_admit_the_flows_the_services_need(environment: str) -> None:
    cluster, pods = cluster_and_pods(environment)
    blocked = [flow for flow in NEEDED if not cluster.allows(pods[flow[0]], pods[flow[1]], flow[2])]
    assert not blocked, f"needed flows refused: {blocked}"
    for name, pod in pods.items():
        if pod.namespace == cluster.namespace:
            assert cluster.allows(pod, pods["dns"], 53, "UDP"), f"{name} cannot resolve names"


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_policies_refuse_every_other_flow(environment: str) -> None:
    cluster, pods = cluster_and_pods(environment)
    admitted = [flow for flow in REFUSED if cluster.allows(pods[flow[0]], pods[flow[1]], flow[2])]
    assert not admitted, f"flows the design does not have were admitted: {admitted}"


def test_default_deny_isolates_every_pod() -> None:
    cluster, pods = cluster_and_pods("prod")
    unknown = Pod("newcomer", cluster.namespace, {"app.kubernetes.io/name": "newcomer"})
    for name, pod in pods.items():
        if pod.namespace == cluster.namespace:
            assert not cluster.allows(unknown, pod, 8000), f"an unknown pod reaches {name}"
            assert not cluster.allows(pod, unknown, 8000), f"{name} reaches an unknown pod"


def outside_peer(peer: dict[str, Any]) -> bool:
    return "ipBlock" in peer or "namespaceSelector" in peer


def test_only_the_gateway_and_prometheus_are_reached_from_outside_the_namespace() -> None:
    cluster, pods = cluster_and_pods("prod")
    metrics_ports = {8000, 9090}
    for policy in cluster.policies:
        selects_gateway = label_selected(policy["spec"]["podSelector"], pods["gateway"].labels)
        for rule in policy["spec"].get("ingress", []):
            peers = rule.get("from")
            if peers and not any(outside_peer(peer) for peer in peers):
                continue
            name = policy["metadata"]["name"]
            if selects_gateway:
                continue
            ports = {entry["port"] for entry in rule.get("ports", [])}
            assert peers, f"{name} admits every source"
            assert ports, f"{name} opens every port to outside the namespace"
            assert ports <= metrics_ports, f"{name} opens {ports} to outside the namespace"
            assert all(
                peer_admits(peer, cluster.namespace, pods["prometheus"]) for peer in peers
            ), name


def test_every_policy_selects_a_pod() -> None:
    cluster, pods = cluster_and_pods("prod")
    for policy in cluster.policies:
        selector = policy["spec"]["podSelector"]
        assert any(label_selected(selector, pod.labels) for pod in pods.values()), (
            f"{policy['metadata']['name']} selects no pod of the fleet"
        )
