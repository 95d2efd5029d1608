"""Kustomize renders the base, every overlay and Argo CD; what it renders is deployable, valid
against Kubernetes' own schemas and the CRDs' schemas, and shaped as the fleet needs."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError
from tests.gitops.rendering import (
    ARGOCD,
    BASE,
    COMPONENTS,
    DASHBOARDS,
    ENVIRONMENTS,
    GITOPS,
    KUSTOMIZATIONS,
    OVERLAYS,
    REPO_ROOT,
    SERVICE_DEPLOYMENTS,
    Manifest,
    containers,
    crd_schema_path,
    find,
    name_of,
    pod_templates,
    render,
    require_schemas,
    schema_errors,
)

# The Kubernetes version native objects are checked against (OpenShift 4.20 runs 1.33).
KUBERNETES_VERSION = os.environ.get("KOHOLINT_K8S_VERSION", "1.33.0")
# Groups of the custom resources the manifests use; each has its operator as a prerequisite.
CUSTOM_GROUPS = {
    "serving.kserve.io", "gateway.networking.k8s.io", "inference.networking.k8s.io", "llm-d.ai",
    "ray.io", "kueue.x-k8s.io", "monitoring.coreos.com", "machine.openshift.io", "argoproj.io",
    "route.openshift.io",
}  # fmt: skip
CLUSTER_SCOPED = {"Namespace", "ClusterQueue", "ResourceFlavor"}
# Images not built here: upstream servers, each pinned to a release (never a floating tag).
UPSTREAM_IMAGES = {
    "redis": "Redis (streams)",
    "minio/minio": "MinIO (object store)",
    "minio/mc": "MinIO client (bucket job)",
    "vllm/vllm-openai": "vLLM's OpenAI-compatible server (ServingRuntime)",
    "ghcr.io/llm-d/llm-d-router-endpoint-picker": "llm-d's endpoint picker",
}
LLM_ROUTES = ("vision", "dialog", "puzzle", "state")
SECRET_LIKE = re.compile(r"KEY|SECRET|PASSWORD|TOKEN", re.IGNORECASE)


def api_group(manifest: Manifest) -> str:
    return str(manifest["apiVersion"]).rpartition("/")[0]


def is_custom(manifest: Manifest) -> bool:
    return api_group(manifest) in CUSTOM_GROUPS


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_rendered_object_is_identified(kustomization: str) -> None:
    manifests = render(kustomization)
    assert manifests, f"{kustomization} renders nothing"
    for manifest in manifests:
        assert manifest.get("apiVersion"), f"object without apiVersion in {kustomization}"
        assert manifest.get("kind"), f"object without kind in {kustomization}"
        assert manifest.get("metadata", {}).get("name"), f"{manifest['kind']} without a name"
    names = [(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in manifests]
    assert len(names) == len(set(names)), f"{kustomization} renders an object twice"


def test_base_has_one_folder_per_component() -> None:
    base = yaml.safe_load((GITOPS / "base" / "kustomization.yaml").read_text())
    for component in COMPONENTS:
        folder = GITOPS / "base" / component
        assert (folder / "kustomization.yaml").is_file(), f"{component}/ has no kustomization"
        assert component in base["resources"], f"base does not include {component}/"


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_overlay_patches_live_in_patches_folder(environment: str) -> None:
    folder = REPO_ROOT / OVERLAYS[environment]
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    used = {patch["path"] for patch in kustomization["patches"]}
    present = {f"patches/{path.name}" for path in (folder / "patches").glob("*.yaml")}
    assert used, f"{environment} has no patches"
    assert used == present, (
        f"{environment}: patches unused {present - used}, missing {used - present}"
    )


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_overlay_lives_in_its_own_namespace(environment: str) -> None:
    namespace = f"koholint-{environment}"
    manifests = render(OVERLAYS[environment])
    find(manifests, "Namespace", namespace)
    for manifest in manifests:
        where = manifest["metadata"].get("namespace")
        if manifest["kind"] in CLUSTER_SCOPED:
            assert where is None, f"{name_of(manifest)} is cluster-scoped but has a namespace"
        elif manifest["kind"] == "MachineSet":
            assert where == "openshift-machine-api", name_of(manifest)
        else:
            assert where == namespace, f"{name_of(manifest)} in {where}"


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_native_objects_match_kubernetes_schemas(kustomization: str) -> None:
    for manifest in render(kustomization):
        if is_custom(manifest):
            continue  # checked against its CRD's schema below
        try:
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
        except SchemaNotFoundError:
            assert is_custom(manifest), (
                f"{name_of(manifest)}: unknown kind {manifest['apiVersion']}"
            )
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{name_of(manifest)} in {kustomization}: {error.message}")


def test_native_schema_check_rejects_a_misspelt_field() -> None:
    deployment = find(render(OVERLAYS["dev"]), "Deployment", "planner")
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_custom_resources_match_crd_schemas(kustomization: str) -> None:
    require_schemas()
    for manifest in filter(is_custom, render(kustomization)):
        path = crd_schema_path(manifest)
        assert path.is_file(), f"no CRD schema for {name_of(manifest)} at {path}"
        errors = schema_errors(manifest, path)
        assert not errors, f"{name_of(manifest)} does not match {path.name}:\n" + "\n".join(errors)


def test_crd_schema_check_rejects_an_unknown_field() -> None:
    require_schemas()
    pool = find(render(BASE), "InferencePool", "vision")
    legacy = {**pool, "spec": {**pool["spec"], "targetPortNumber": 8000}}
    assert schema_errors(legacy, crd_schema_path(legacy)), "InferencePool v1 took a v1alpha2 field"


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_pods_have_resources_and_services_have_probes(environment: str) -> None:
    for manifest in render(OVERLAYS[environment]):
        for where, template in pod_templates(manifest):
            for container in containers(template):
                resources = container.get("resources", {})
                for bound in ("requests", "limits"):
                    assert {"cpu", "memory"} <= set(resources.get(bound, {})), f"{where}: {bound}"
                if manifest["kind"] == "Deployment":
                    assert "readinessProbe" in container, f"{where} has no readinessProbe"
                    assert "livenessProbe" in container, f"{where} has no livenessProbe"
    for name in SERVICE_DEPLOYMENTS:
        deployment = find(render(OVERLAYS[environment]), "Deployment", name)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", name
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", name


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_pods_run_restricted(environment: str) -> None:
    """Non-root, no privilege escalation, no capabilities, a seccomp profile, read-only root."""
    for manifest in render(OVERLAYS[environment]):
        for where, template in pod_templates(manifest):
            pod_security = template["spec"].get("securityContext", {})
            for container in containers(template):
                security = {**pod_security, **container.get("securityContext", {})}
                label = f"{where} container {container['name']}"
                assert security.get("runAsNonRoot") is True, f"{label} may run as root"
                assert security.get("allowPrivilegeEscalation") is False, label
                assert security.get("readOnlyRootFilesystem") is True, label
                assert security.get("capabilities", {}).get("drop") == ["ALL"], label
                assert security.get("seccompProfile", {}).get("type") == "RuntimeDefault", label


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_service_settings_come_from_config_maps_and_secrets(environment: str) -> None:
    manifests = render(OVERLAYS[environment])
    config_maps = {m["metadata"]["name"] for m in manifests if m["kind"] == "ConfigMap"}
    for name in SERVICE_DEPLOYMENTS:
        container = find(manifests, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        sources = [source["configMapRef"]["name"] for source in container.get("envFrom", [])]
        assert sources, f"{name} takes no settings from a ConfigMap"
        assert set(sources) <= config_maps, f"{name}: settings ConfigMap missing"
        for variable in container.get("env", []):
            assert not ("value" in variable and SECRET_LIKE.search(variable["name"])), (
                f"{name}: {variable['name']} is a literal; take it from a Secret"
            )
    for config_map in (m for m in manifests if m["kind"] == "ConfigMap"):
        for key in config_map.get("data", {}):
            assert not SECRET_LIKE.search(key), f"{name_of(config_map)} holds {key}"
    secrets = [m for m in manifests if m["kind"] == "Secret"]
    if environment != "dev":  # staging and prod take credentials from the secret manager
        assert not secrets, f"{environment} carries Secrets in git: {[name_of(s) for s in secrets]}"


def referenced_secrets(template: Manifest) -> set[str]:
    names = set()
    for container in containers(template):
        for source in container.get("envFrom", []):
            if "secretRef" in source and not source["secretRef"].get("optional"):
                names.add(source["secretRef"]["name"])
        for variable in container.get("env", []):
            reference = variable.get("valueFrom", {}).get("secretKeyRef")
            if reference and not reference.get("optional"):
                names.add(reference["name"])
    return names


def referenced_config_maps(template: Manifest) -> set[str]:
    names = {
        source["configMapRef"]["name"]
        for container in containers(template)
        for source in container.get("envFrom", [])
        if "configMapRef" in source
    }
    return names | {
        volume["configMap"]["name"]
        for volume in template["spec"].get("volumes", [])
        if "configMap" in volume
    }


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_every_config_map_a_pod_names_exists(environment: str) -> None:
    manifests = render(OVERLAYS[environment])
    config_maps = {m["metadata"]["name"] for m in manifests if m["kind"] == "ConfigMap"}
    for manifest in manifests:
        for where, template in pod_templates(manifest):
            missing = referenced_config_maps(template) - config_maps
            assert not missing, f"{where} names ConfigMaps {missing} that {environment} lacks"


def test_dev_overlay_provides_every_secret_it_references() -> None:
    manifests = render(OVERLAYS["dev"])
    secrets = {m["metadata"]["name"] for m in manifests if m["kind"] == "Secret"}
    for manifest in manifests:
        for where, template in pod_templates(manifest):
            missing = referenced_secrets(template) - secrets
            assert not missing, f"{where} needs Secrets {missing} that dev does not generate"


def images(manifest: Manifest) -> list[str]:
    found = [c["image"] for _, template in pod_templates(manifest) for c in containers(template)]
    if manifest["kind"] == "ServingRuntime":
        found += [container["image"] for container in manifest["spec"]["containers"]]
    return found


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_every_image_is_built_here_or_an_upstream_release(environment: str) -> None:
    seen = set()
    for manifest in render(OVERLAYS[environment]):
        for image in images(manifest):
            repository, _, tag = image.rpartition(":")
            assert repository, f"{image}: name a tag"
            assert tag not in ("", "latest"), f"{image}: pin a release tag"
            seen.add(repository)
            ours = re.fullmatch(r"(?:ghcr\.io/)?koholint/([a-z0-9-]+)", repository)
            if ours:
                dockerfile = REPO_ROOT / "docker" / f"Dockerfile.{ours.group(1)}"
                assert dockerfile.is_file(), f"{image}: no {dockerfile.relative_to(REPO_ROOT)}"
            else:
                assert repository in UPSTREAM_IMAGES, (
                    f"{image} is neither ours nor a known upstream"
                )
    for name in SERVICE_DEPLOYMENTS:
        assert f"ghcr.io/koholint/{name}" in seen, f"{environment} runs no {name} image"


EXPECTED = {
    # environment: (model replicas, GPUs per model, Ray workers, envs per worker)
    "dev": (1, {"vision": 1, "puzzle": 1, "small": 1}, 1, 3),
    "staging": (2, {"vision": 2, "puzzle": 2, "small": 1}, 3, 6),
    "prod": (3, {"vision": 2, "puzzle": 2, "small": 1}, 5, 6),
}


def gpus(service: Manifest) -> int:
    resources = service["spec"]["predictor"]["model"]["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"]
    return int(resources["requests"]["nvidia.com/gpu"])


def tensor_parallel(service: Manifest) -> int:
    for argument in service["spec"]["predictor"]["model"]["args"]:
        if argument.startswith("--tensor-parallel-size="):
            return int(argument.split("=", 1)[1])
    raise AssertionError(f"{name_of(service)} sets no --tensor-parallel-size")


def worker_groups(manifest: Manifest) -> list[dict[str, Any]]:
    spec = manifest["spec"]
    cluster = spec["rayClusterSpec"] if manifest["kind"] == "RayJob" else spec
    return list(cluster["workerGroupSpecs"])


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_overlays_differ_as_designed(environment: str) -> None:
    replicas, gpu_per_model, workers, envs = EXPECTED[environment]
    manifests = render(OVERLAYS[environment])
    models = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "InferenceService"}
    assert set(models) == set(gpu_per_model)
    for name, model in models.items():
        assert model["spec"]["predictor"]["minReplicas"] == replicas, name
        assert gpus(model) == gpu_per_model[name], f"{environment} {name}: GPUs"
        assert tensor_parallel(model) == gpus(model), f"{name}: tensor parallel != GPUs"
    for kind in ("RayCluster", "RayJob"):
        ray = next(m for m in manifests if m["kind"] == kind)
        [group] = worker_groups(ray)
        assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == workers, kind
        assert group["rayStartParams"]["num-cpus"] == "1", "one env runner per worker pod"
    settings = find(manifests, "ConfigMap", trainer_config_name(manifests))["data"]
    assert settings["KOHOLINT_TRAINER_NUM_ENV_RUNNERS"] == str(workers)
    assert settings["KOHOLINT_TRAINER_ENVS_PER_ENV_RUNNER"] == str(envs)
    assert "KOHOLINT_TRAINER_RAY_ADDRESS" not in settings, "the RayJob must join its own cluster"


def trainer_config_name(manifests: list[Manifest]) -> str:
    names = [str(m["metadata"]["name"]) for m in manifests if m["kind"] == "ConfigMap"]
    return next(name for name in names if name.startswith("trainer-config"))


def test_dev_uses_fewer_gpus_than_staging_and_prod_more_replicas() -> None:
    def total_gpus(environment: str) -> int:
        services = [m for m in render(OVERLAYS[environment]) if m["kind"] == "InferenceService"]
        return sum(gpus(s) * s["spec"]["predictor"]["minReplicas"] for s in services)

    assert total_gpus("dev") < total_gpus("staging") < total_gpus("prod")


def test_prod_has_machine_sets_budgets_and_autoscalers() -> None:
    manifests = render(OVERLAYS["prod"])
    pools = {
        m["spec"]["template"]["spec"]["metadata"]["labels"]["koholint.dev/node-pool"]
        for m in manifests
        if m["kind"] == "MachineSet"
    }
    assert pools == {"llm-inference", "pyboy-training"}
    for model in (m for m in manifests if m["kind"] == "InferenceService"):
        assert model["spec"]["predictor"]["nodeSelector"] == {
            "koholint.dev/node-pool": "llm-inference"
        }
    ray = find(manifests, "RayCluster", "interactive")
    head = ray["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["nodeSelector"] == {"koholint.dev/node-pool": "pyboy-training"}
    deployments = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Deployment"}
    scaled = {
        m["spec"]["scaleTargetRef"]["name"]
        for m in manifests
        if m["kind"] == "HorizontalPodAutoscaler"
    }
    assert scaled == {"planner", "evaluator", "console"}, "HPAs belong on the stateless services"
    for name in scaled:
        autoscaler = find(manifests, "HorizontalPodAutoscaler", name)
        assert deployments[name]["spec"]["replicas"] == autoscaler["spec"]["minReplicas"]
    budgets = [m for m in manifests if m["kind"] == "PodDisruptionBudget"]
    covered = {tuple(b["spec"]["selector"]["matchLabels"].items())[0][1] for b in budgets}
    assert {"planner", "evaluator", "console", "vision", "puzzle", "small"} <= covered
    assert not [m for m in render(OVERLAYS["staging"]) if m["kind"] == "MachineSet"]


def test_prod_exposes_the_console_through_the_gateway_on_an_openshift_route() -> None:
    route = find(render(OVERLAYS["prod"]), "Route", "console")
    gateway = find(render(BASE), "Gateway", "koholint-gateway")
    # Istio names the Service it deploys for a Gateway "<gateway>-<class>".
    assert route["spec"]["to"]["name"] == f"koholint-gateway-{gateway['spec']['gatewayClassName']}"
    assert route["spec"]["port"]["targetPort"] == gateway["spec"]["listeners"][0]["port"]
    assert route["spec"]["tls"]["termination"] == "edge"
    assert not [m for m in render(OVERLAYS["staging"]) if m["kind"] == "Route"]


def test_models_serve_the_routes_with_structured_output() -> None:
    manifests = render(BASE)
    models = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "InferenceService"}
    assert {name: m["spec"]["predictor"]["model"]["storageUri"] for name, m in models.items()} == {
        "vision": "hf://Qwen/Qwen2.5-VL-32B-Instruct",
        "puzzle": "hf://Qwen/Qwen2.5-32B-Instruct",
        "small": "hf://Qwen/Qwen2.5-7B-Instruct",
    }
    served = set()
    for model in models.values():
        assert model["spec"]["predictor"]["model"]["runtime"] == "vllm-openai"
        assert model["spec"]["predictor"]["serviceAccountName"] == "llm-inference"
        arguments = model["spec"]["predictor"]["model"]["args"]
        index = next(i for i, a in enumerate(arguments) if a.startswith("--served-model-name"))
        names = arguments[index].partition("=")[2] or " ".join(
            a for a in arguments[index + 1 :] if not a.startswith("--")
        )
        served |= set(names.split())
    assert served == set(LLM_ROUTES), "every route's model name is served"
    runtime = find(manifests, "ServingRuntime", "vllm-openai")["spec"]["containers"][0]
    assert any(a.startswith("--structured-outputs-config") for a in runtime["args"])
    find(manifests, "RoleBinding", "llm-inference")


def test_gateway_routes_each_path_to_an_inference_pool() -> None:
    manifests = render(BASE)
    pools = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "InferencePool"}
    assert all(m["apiVersion"] == "inference.networking.k8s.io/v1" for m in pools.values())
    routed = {}
    for route in (m for m in manifests if m["kind"] == "HTTPRoute"):
        [rule] = route["spec"]["rules"]
        [backend] = rule["backendRefs"]
        path = rule["matches"][0]["path"]["value"]
        if backend.get("kind") == "InferencePool":
            assert backend["group"] == "inference.networking.k8s.io", route["metadata"]["name"]
            assert backend["name"] in pools, f"{path} routes to a missing pool"
            routed[path] = backend["name"]
    assert set(routed) == {f"/{route}" for route in LLM_ROUTES}
    for name, pool in pools.items():
        spec = pool["spec"]
        picker = spec["endpointPickerRef"]
        service = find(manifests, "Service", picker["name"])
        assert picker["port"]["number"] in [p["port"] for p in service["spec"]["ports"]]
        deployment = find(manifests, "Deployment", picker["name"])
        assert (
            f"--pool-name={name}" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        )
        assert spec["selector"]["matchLabels"] == {"serving.kserve.io/inferenceservice": name}
        assert spec["targetPorts"] == [{"number": 8000}]
    for objective in (m for m in manifests if m["kind"] == "InferenceObjective"):
        assert objective["spec"]["poolRef"]["name"] in pools, name_of(objective)


def test_endpoint_pickers_score_prefix_cache_and_keep_sessions() -> None:
    config = find(render(BASE), "ConfigMap", epp_config_name())["data"]
    for name, text in config.items():
        [profile] = yaml.safe_load(text)["schedulingProfiles"]
        assert "prefix-cache-scorer" in {p["pluginRef"] for p in profile["plugins"]}, name
    [multi_turn] = yaml.safe_load(config["multi-turn.yaml"])["schedulingProfiles"]
    assert "session-affinity-scorer" in {p["pluginRef"] for p in multi_turn["plugins"]}
    pickers = {m["metadata"]["name"]: m for m in render(BASE) if m["kind"] == "Deployment"}
    for pool in ("puzzle", "small"):  # the planner's multi-turn routes
        arguments = pickers[f"{pool}-epp"]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--config-file=/etc/epp/multi-turn.yaml" in arguments


def epp_config_name() -> str:
    names = [str(m["metadata"]["name"]) for m in render(BASE) if m["kind"] == "ConfigMap"]
    return next(name for name in names if name.startswith("epp-config"))


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_ray_job_runs_training_under_kueue_on_its_own_cluster(environment: str) -> None:
    manifests = render(OVERLAYS[environment])
    job = find(manifests, "RayJob", "train")
    spec = job["spec"]
    assert spec["entrypoint"].startswith("koholint train")
    assert "rayClusterSpec" in spec, "the job brings its own cluster"
    assert "clusterSelector" not in spec, "not a selector of an existing cluster"
    assert spec["shutdownAfterJobFinishes"] is True
    assert not spec["rayClusterSpec"].get("enableInTreeAutoscaling", False)
    queue_name = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    local_queue = find(manifests, "LocalQueue", queue_name)
    cluster_queue = find(manifests, "ClusterQueue", local_queue["spec"]["clusterQueue"])
    flavors = {f["name"] for g in cluster_queue["spec"]["resourceGroups"] for f in g["flavors"]}
    assert flavors <= {m["metadata"]["name"] for m in manifests if m["kind"] == "ResourceFlavor"}
    for batch in (m for m in manifests if m["kind"] == "Job" and m["spec"].get("suspend")):
        assert batch["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue_name


def test_trainer_may_manage_ray_clusters_and_jobs() -> None:
    manifests = render(BASE)
    deployment = find(manifests, "Deployment", "trainer")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    bindings = [
        b for b in manifests
        if b["kind"] == "RoleBinding"
        and ("ServiceAccount", account) in {(s["kind"], s["name"]) for s in b["subjects"]}
    ]  # fmt: skip
    rules = [
        rule for b in bindings for rule in find(manifests, "Role", b["roleRef"]["name"])["rules"]
    ]
    for resource in ("rayjobs", "rayclusters"):
        verbs = {
            v
            for r in rules
            if "ray.io" in r["apiGroups"] and resource in r["resources"]
            for v in r["verbs"]
        }
        assert {"get", "list", "watch", "create", "delete"} <= verbs, resource


def test_argocd_syncs_each_overlay_automatically() -> None:
    manifests = render(ARGOCD)
    project = find(manifests, "AppProject", "koholint")["spec"]
    applications = [m for m in manifests if m["kind"] == "Application"]
    assert sorted(a["spec"]["source"]["path"] for a in applications) == sorted(OVERLAYS.values())
    for application in applications:
        spec = application["spec"]
        environment = Path(spec["source"]["path"]).name
        assert spec["source"]["repoURL"] in project["sourceRepos"]
        assert spec["destination"]["namespace"] == f"koholint-{environment}"
        assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
        options = set(spec["syncPolicy"]["syncOptions"])
        assert {"RespectIgnoreDifferences=true", "SkipDryRunOnMissingResource=true"} <= options
        ignored = {
            (d["kind"], pointer) for d in spec["ignoreDifferences"] for pointer in d["jsonPointers"]
        }
        assert ("RayJob", "/spec/suspend") in ignored
        assert ("Job", "/spec/suspend") in ignored
        replicas = {
            d.get("name")
            for d in spec["ignoreDifferences"]
            if "/spec/replicas" in d["jsonPointers"]
        }
        autoscaled = {
            m["spec"]["scaleTargetRef"]["name"]
            for m in render(OVERLAYS[environment])
            if m["kind"] == "HorizontalPodAutoscaler"
        }
        assert replicas == autoscaled, (
            f"{environment}: replicas ignored only where an HPA owns them"
        )


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_argocd_project_admits_what_the_overlay_renders(environment: str) -> None:
    project = find(render(ARGOCD), "AppProject", "koholint")["spec"]
    destinations = {d["namespace"] for d in project["destinations"]}
    cluster_kinds = {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]}
    namespaced_kinds = {(k["group"], k["kind"]) for k in project["namespaceResourceWhitelist"]}
    for manifest in render(OVERLAYS[environment]):
        kind = (api_group(manifest), manifest["kind"])
        namespace = manifest["metadata"].get("namespace")
        if namespace is None:
            assert kind in cluster_kinds, f"AppProject refuses cluster-scoped {kind}"
        else:
            assert namespace in destinations, f"AppProject refuses namespace {namespace}"
            assert kind in namespaced_kinds, f"AppProject refuses {kind}"


def test_dashboards_ship_as_sidecar_config_maps_applied_server_side() -> None:
    manifests = render(BASE)
    shipped = {}
    for config_map in (m for m in manifests if m["kind"] == "ConfigMap"):
        if config_map["metadata"].get("labels", {}).get("grafana_dashboard") == "1":
            annotations = config_map["metadata"]["annotations"]
            assert "ServerSideApply=true" in annotations["argocd.argoproj.io/sync-options"]
            shipped.update(config_map["data"])
    files = {path.name: path.read_text() for path in DASHBOARDS.glob("*.json")}
    assert shipped == files
    assert {"fleet-overview.json", "training.json", "evaluator-reward-model.json",
            "env-sim.json", "llm-routes.json"} == set(files)  # fmt: skip


def test_every_service_has_a_service_monitor() -> None:
    manifests = render(BASE)
    for name in SERVICE_DEPLOYMENTS:
        monitor = find(manifests, "ServiceMonitor", name)
        service = find(manifests, "Service", name)
        assert (
            monitor["spec"]["selector"]["matchLabels"].items()
            <= service["metadata"]["labels"].items()
        )
        ports = {port["name"] for port in service["spec"]["ports"]}
        assert {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]} <= ports


SETTINGS_MODULES = {"env-sim": "env_sim", "planner": "planner", "evaluator": "evaluator",
                    "reward-model": "reward_model", "console": "console"}  # fmt: skip


def config_map_data(manifests: list[Manifest], prefix: str) -> dict[str, str]:
    names = [m for m in manifests if m["kind"] == "ConfigMap"]
    return dict(next(m for m in names if m["metadata"]["name"].startswith(prefix))["data"])


@pytest.mark.parametrize("service", sorted(SETTINGS_MODULES))
def test_config_maps_name_settings_the_service_has(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelt variable is ignored by pydantic-settings (extra="ignore"): catch it here."""
    import importlib
    import importlib.util

    package = SETTINGS_MODULES[service]
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed yet")
    settings_type = importlib.import_module(f"{package}.config").Settings
    prefix = settings_type.model_config["env_prefix"]
    data = config_map_data(render(OVERLAYS["prod"]), f"{service}-config-")
    for key, value in data.items():
        assert key.startswith(prefix), f"{service}-config: {key} lacks {prefix}"
        assert key[len(prefix) :].lower() in settings_type.model_fields, f"{key}: no such setting"
        monkeypatch.setenv(key, value)
    settings_type()  # the values validate


def test_trainer_config_resolves_for_the_service_and_the_ray_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("trainer")
    from trainer.config import Settings
    from trainer.ppo.config import TrainConfig

    for key, value in config_map_data(render(OVERLAYS["prod"]), "trainer-config").items():
        monkeypatch.setenv(key, value)
    config = TrainConfig.load({}, dict(os.environ))
    assert (config.num_env_runners, config.envs_per_env_runner, config.planner) == (5, 6, "http")
    settings = Settings()
    assert settings.store_url.startswith("s3://koholint")
    assert settings.planner_url == "http://planner:8000"
    assert settings.ray_address == "", "the RayJob's driver joins the cluster Ray gives it"
