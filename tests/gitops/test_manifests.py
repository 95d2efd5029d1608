"""Kustomize renders every overlay, and what it renders is deployable and schema-valid.

Rendering needs `kubectl` (it bundles kustomize). Custom resources are checked against the CRD
schemas in the folder named by KOHOLINT_K8S_SCHEMAS (default: ../shared/k8s-schemas beside the
repository), laid out as {group}/{kind_lowercase}_{version}.json.
"""

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENTS = ("dev", "staging", "prod")
OVERLAYS = {environment: f"gitops/overlays/{environment}" for environment in ENVIRONMENTS}
ARGOCD = "gitops/argocd"
KUSTOMIZATIONS = [*OVERLAYS.values(), ARGOCD]
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}

Manifest = dict[str, Any]


def schemas_dir() -> Path:
    configured = os.environ.get("KOHOLINT_K8S_SCHEMAS")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "k8s-schemas"


@cache
def render(kustomization: str) -> list[Manifest]:
    """The objects `kubectl kustomize` renders for a kustomization folder (cached per worker)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not found on PATH: install kubectl (it bundles kustomize) to render")
    result = subprocess.run(
        [kubectl, "kustomize", str(REPO_ROOT / kustomization)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {kustomization} failed:\n{result.stderr}"
    return [document for document in yaml.safe_load_all(result.stdout) if document]


def pod_spec(workload: Manifest) -> Manifest:
    return workload["spec"]["template"]["spec"]


def containers(workload: Manifest) -> list[Manifest]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


def describe(workload: Manifest, container: Manifest) -> str:
    return f"{workload['kind']}/{workload['metadata']['name']} container {container['name']}"


def schema_path(manifest: Manifest) -> Path | None:
    """Where the CRD schema of a custom resource lives; None for core kinds (no group folder)."""
    group, _, version = manifest["apiVersion"].rpartition("/")
    folder = schemas_dir() / group
    if not group or not folder.is_dir():
        return None
    return folder / f"{manifest['kind'].lower()}_{version}.json"


def schema_errors(manifest: Manifest, path: Path) -> list[str]:
    schema = json.loads(path.read_text())
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)(
        schema
    )
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in validator.iter_errors(manifest)
    ]


def require_schemas() -> None:
    if not schemas_dir().is_dir():
        pytest.skip(
            f"CRD schemas not found at {schemas_dir()}: set KOHOLINT_K8S_SCHEMAS to the "
            "k8s-schemas folder (../shared/k8s-schemas) to validate custom resources"
        )


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_rendered_object_is_identified(kustomization: str) -> None:
    manifests = render(kustomization)
    assert manifests, f"{kustomization} renders nothing"
    for manifest in manifests:
        assert manifest.get("apiVersion"), f"object without apiVersion in {kustomization}"
        assert manifest.get("kind"), f"object without kind in {kustomization}"
        assert manifest.get("metadata", {}).get("name"), (
            f"{manifest['kind']} without metadata.name in {kustomization}"
        )


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_overlay_lives_in_its_own_namespace(environment: str) -> None:
    namespace = f"koholint-{environment}"
    manifests = render(OVERLAYS[environment])
    assert {"kind": "Namespace", "name": namespace} in [
        {"kind": manifest["kind"], "name": manifest["metadata"]["name"]} for manifest in manifests
    ]
    for manifest in manifests:
        if manifest["kind"] != "Namespace":
            assert manifest["metadata"].get("namespace") == namespace, manifest["metadata"]


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_workloads_have_resources_and_probes(environment: str) -> None:
    workloads = [m for m in render(OVERLAYS[environment]) if m["kind"] in WORKLOAD_KINDS]
    assert {"Deployment", "StatefulSet"} <= {workload["kind"] for workload in workloads}
    for workload in workloads:
        for container in containers(workload):
            where = describe(workload, container)
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(bound, {})), f"{where}: {bound}"
            if workload["kind"] in {"Deployment", "StatefulSet", "DaemonSet"}:
                assert "readinessProbe" in container, f"{where} has no readinessProbe"
                assert "livenessProbe" in container, f"{where} has no livenessProbe"


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_workloads_run_as_non_root(environment: str) -> None:
    for workload in render(OVERLAYS[environment]):
        if workload["kind"] not in WORKLOAD_KINDS:
            continue
        pod_non_root = pod_spec(workload).get("securityContext", {}).get("runAsNonRoot")
        for container in containers(workload):
            security = container.get("securityContext", {})
            where = describe(workload, container)
            assert security.get("runAsNonRoot", pod_non_root) is True, f"{where} may run as root"
            assert security.get("allowPrivilegeEscalation") is False, where


def test_dev_overlay_provides_every_secret_it_references() -> None:
    manifests = render(OVERLAYS["dev"])
    secrets = {m["metadata"]["name"] for m in manifests if m["kind"] == "Secret"}
    for workload in manifests:
        if workload["kind"] not in WORKLOAD_KINDS:
            continue
        for container in containers(workload):
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets, workload["metadata"]["name"]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_custom_resources_match_crd_schemas(kustomization: str) -> None:
    require_schemas()
    for manifest in render(kustomization):
        path = schema_path(manifest)
        if path is None:
            continue
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        assert path.is_file(), f"no CRD schema for {name} ({manifest['apiVersion']}) at {path}"
        errors = schema_errors(manifest, path)
        assert not errors, f"{name} does not match {path.name}:\n" + "\n".join(errors)


def test_argocd_objects_have_crd_schemas() -> None:
    require_schemas()
    manifests = render(ARGOCD)
    assert {manifest["kind"] for manifest in manifests} == {"AppProject", "Application"}
    for manifest in manifests:
        path = schema_path(manifest)
        assert path is not None, f"no CRD schema folder for {manifest['apiVersion']}"
        assert path.is_file(), f"no CRD schema for {manifest['kind']} at {path}"


def test_schema_check_rejects_an_unknown_field() -> None:
    require_schemas()
    application = next(m for m in render(ARGOCD) if m["kind"] == "Application")
    broken = {**application, "spec": {**application["spec"], "syncPolicyy": {}}}
    path = schema_path(broken)
    assert path is not None
    assert schema_errors(broken, path), "the Application schema accepted an unknown field"


def test_one_application_per_overlay() -> None:
    manifests = render(ARGOCD)
    projects = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "AppProject"}
    applications = [m for m in manifests if m["kind"] == "Application"]
    assert sorted(app["spec"]["source"]["path"] for app in applications) == sorted(
        OVERLAYS.values()
    )
    for application in applications:
        spec = application["spec"]
        environment = Path(spec["source"]["path"]).name
        project = projects[spec["project"]]["spec"]
        assert spec["source"]["repoURL"] in project["sourceRepos"]
        assert spec["destination"]["namespace"] == f"koholint-{environment}"
        assert {
            "server": spec["destination"]["server"],
            "namespace": spec["destination"]["namespace"],
        } in project["destinations"]
        automated = "automated" in spec.get("syncPolicy", {})
        assert automated == (environment == "dev"), f"{environment}: automated sync is dev-only"
