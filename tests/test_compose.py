"""compose.yaml parses and every service is either health-checked or a one-shot job."""

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
