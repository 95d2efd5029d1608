"""What the gitops tests share: rendering with `kubectl kustomize`, and reading what it renders.

Rendering needs `kubectl` (it bundles kustomize). Custom resources are checked against the CRD
schemas in the folder named by KOHOLINT_K8S_SCHEMAS (default: ../shared/k8s-schemas beside the
repository), laid out as {group}/{kind_lowercase}_{version}.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
GITOPS = REPO_ROOT / "gitops"
ENVIRONMENTS = ("dev", "staging", "prod")
OVERLAYS = {environment: f"gitops/overlays/{environment}" for environment in ENVIRONMENTS}
BASE = "gitops/base"
ARGOCD = "gitops/argocd"
KUSTOMIZATIONS = [BASE, *OVERLAYS.values(), ARGOCD]
COMPONENTS = ("storage", "env-sim", "planner", "rl-training", "llm-inference", "llm-d-gateway",
              "evaluator", "console", "networking", "monitoring")  # fmt: skip
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
SERVICE_DEPLOYMENTS = ("env-sim", "planner", "trainer", "evaluator", "reward-model", "console")
DASHBOARDS = GITOPS / "base" / "monitoring" / "dashboards"
ALERTS = GITOPS / "base" / "monitoring" / "rules" / "alerts.yaml"
ALERT_TESTS = GITOPS / "base" / "monitoring" / "rules" / "tests" / "alerts.test.yaml"

Manifest = dict[str, Any]


def schemas_dir() -> Path:
    configured = os.environ.get("KOHOLINT_K8S_SCHEMAS")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "k8s-schemas"


def require_schemas() -> None:
    if not schemas_dir().is_dir():
        pytest.skip(
            f"CRD schemas not found at {schemas_dir()}: set KOHOLINT_K8S_SCHEMAS to the "
            "k8s-schemas folder (../shared/k8s-schemas) to validate custom resources"
        )


def require_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found on PATH: install it (Debian package {package})")
    return path


@cache
def _render(kustomization: str) -> tuple[Manifest, ...]:
    kubectl = require_tool("kubectl", "kubectl")
    result = subprocess.run(
        [kubectl, "kustomize", str(REPO_ROOT / kustomization)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {kustomization} failed:\n{result.stderr}"
    return tuple(document for document in yaml.safe_load_all(result.stdout) if document)


def render(kustomization: str) -> list[Manifest]:
    """The objects `kubectl kustomize` renders for a kustomization folder (cached per worker)."""
    return list(_render(kustomization))


def find(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    matches = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name}, found {len(matches)}"
    return matches[0]


def name_of(manifest: Manifest) -> str:
    return f"{manifest['kind']}/{manifest['metadata']['name']}"


def pod_templates(manifest: Manifest) -> Iterator[tuple[str, Manifest]]:
    """Every pod template in an object: workloads, Ray head and workers (also inside a RayJob)."""
    kind, spec = manifest["kind"], manifest.get("spec", {})
    if kind in WORKLOAD_KINDS:
        yield name_of(manifest), spec["template"]
    elif kind in ("RayCluster", "RayJob"):
        cluster = spec["rayClusterSpec"] if kind == "RayJob" else spec
        yield f"{name_of(manifest)} head", cluster["headGroupSpec"]["template"]
        for group in cluster["workerGroupSpecs"]:
            yield f"{name_of(manifest)} {group['groupName']}", group["template"]
        if kind == "RayJob" and "submitterPodTemplate" in spec:
            yield f"{name_of(manifest)} submitter", spec["submitterPodTemplate"]


def containers(template: Manifest) -> list[Manifest]:
    spec = template["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def crd_schema_path(manifest: Manifest) -> Path:
    group, _, version = str(manifest["apiVersion"]).rpartition("/")
    return schemas_dir() / group / f"{str(manifest['kind']).lower()}_{version}.json"


def schema_errors(manifest: Manifest, path: Path) -> list[str]:
    schema = json.loads(path.read_text())
    validator_type = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in validator_type(schema).iter_errors(manifest)
    ]


def dashboards() -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(DASHBOARDS.glob("*.json"))}


def panel_queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, PromQL) for every target of every panel."""
    return [
        (name, panel["title"], target["expr"])
        for name, board in dashboards().items()
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]


def alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["spec"]["groups"] for rule in group["rules"]]
