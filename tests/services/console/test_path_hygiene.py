"""Ids the console forwards into another service's URL obey the library's one rule: '.', '..'
and anything a URL decodes or splits on, raw or percent-encoded, are the console's own 422
naming the field, and nothing reaches the fleet.

The console is served by uvicorn and asked with raw request targets (http.client does not
normalise '..'), so the forms arrive as a hostile client sends them; its fleet calls go to a
transport that counts them.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from console.app import create_app
from console.config import Settings
from koholint.web.auth import served_routes

HOSTILE = [
    "..", ".", "%2e%2e", "%2E%2E", "%2e", "%2E", ".%2e", "%2e.", "..%2f", "..%2F", "%2e%2e%2f",
    "%2E%2E%2F", "..%5c", "%252e%252e", "a%2fb", "%2f", ".hidden", "a%00", "a%20b", "..;x",
]  # fmt: skip
"""As sent, in a path segment or a query value: every one refused (422)."""
VALID = {"session_id": "0123abcd", "run": "run-1", "env": "0", "metric": "reward", "fps": "1"}
BODIES = {"POST": b"{}"}
FLEET = {"env_sim_url": "http://env-sim", "trainer_url": "http://trainer",
         "evaluator_url": "http://evaluator", "reward_model_url": "http://reward-model",
         "planner_url": "http://planner", "llm_local_url": "http://llm-local"}  # fmt: skip


def uses_the_fleet(dependant: Any) -> bool:
    """Whether a handler is given the fleet (the console's clients of the other services)."""
    return any(
        getattr(dependency.call, "__name__", "") == "app_state_fleet" or uses_the_fleet(dependency)
        for dependency in dependant.dependencies
    )


def forwarded_ids(app: FastAPI) -> list[tuple[str, str, str, str]]:
    """(method, path, where, name) of every id a forwarding route takes: each path parameter,
    and each query parameter with a pattern (a name that the service behind it is asked for)."""
    spec = app.openapi()["paths"]
    found = []
    for method, path, dependant in served_routes(app):
        if dependant is None or not uses_the_fleet(dependant):
            continue
        names = [("path", param.name) for param in dependant.path_params]
        names += [
            ("query", parameter["name"])
            for parameter in spec[path][method.lower()].get("parameters", [])
            if parameter["in"] == "query" and has_pattern(parameter["schema"])
        ]
        found += [(method, path, where, name) for where, name in names]
    return sorted(found)


def has_pattern(schema: dict[str, Any]) -> bool:
    return "pattern" in schema or any(has_pattern(option) for option in schema.get("anyOf", []))


def target(path: str, where: str, name: str, form: str) -> str:
    """The raw request target with `form` in place of the parameter `name`."""
    values = {**VALID, name: form} if where == "path" else VALID
    filled = re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], path)
    query = {key: VALID[key] for key in ("metric", "fps") if key in VALID}
    if where == "query":
        query[name] = form
    return filled + "?" + "&".join(f"{key}={value}" for key, value in query.items())


def send_raw(url: str, method: str, raw_target: str) -> tuple[int, dict[str, Any], str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        body = BODIES.get(method)
        headers = {"content-type": "application/json"} if body else {}
        connection.request(method, raw_target, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def console(map_cache_dir: Path) -> Any:
    """The console served on loopback; every call it makes to the fleet is counted."""
    from tests.conftest import ServedApp

    calls: list[str] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        calls.append(f"{request.method} {request.url}")
        return httpx.Response(200, json={})

    settings = Settings(map_cache_dir=str(map_cache_dir), **FLEET)
    app = create_app(settings, transport=httpx.MockTransport(upstream))
    with ServedApp(app) as server:
        yield app, server.url, calls


def test_every_forwarding_route_is_found(console: Any) -> None:
    """The routes that put an id into another service's URL, as the app has them."""
    app, _, _ = console
    paths = {(method, path, name) for method, path, _, name in forwarded_ids(app)}
    for method in ("GET", "POST", "DELETE"):
        assert (method, "/v1/watch/env-sim/{session_id}/play", "session_id") in paths
    assert ("GET", "/v1/watch/env-sim/{session_id}/frame.png", "session_id") in paths
    assert ("GET", "/v1/watch/env-sim/{session_id}/live", "session_id") in paths
    assert ("POST", "/v1/runs/{run}/stop", "run") in paths
    assert ("GET", "/v1/judges/scores", "run") in paths
    assert ("GET", "/v1/checkpoints", "run") in paths


def test_hostile_ids_are_422_naming_the_field_and_never_reach_the_fleet(console: Any) -> None:
    app, url, calls = console
    refused = 0
    for method, path, where, name in forwarded_ids(app):
        for form in HOSTILE:
            raw_target = target(path, where, name, form)
            status, headers, text = send_raw(url, method, raw_target)
            assert status == 422, (method, raw_target, status, text)
            assert headers["content-type"].startswith("application/problem+json"), raw_target
            fields = [error["field"] for error in json.loads(text).get("errors") or []]
            assert f"{where}.{name}" in fields, (method, raw_target, text)
            refused += 1
    assert calls == [], f"reached the fleet: {calls}"
    assert refused >= 10 * len(HOSTILE)


def test_valid_ids_do_reach_the_fleet(console: Any) -> None:
    """The same requests with valid ids are forwarded: the 422s above are the rule's."""
    app, url, calls = console
    before = len(calls)
    status, _, text = send_raw(url, "GET", "/v1/watch/env-sim/0123abcd/state")
    assert status == 200, text
    assert calls[before:] == ["GET http://env-sim/v1/sessions/0123abcd/state"]


@pytest.mark.parametrize("session_id", ["..", ".", "a/b", "%2e%2e", "", "a" * 129])
def test_the_fleet_refuses_them_itself_too(tmp_path: Path, session_id: str) -> None:
    """Behind the routes, the fleet's own path building applies the rule again."""
    from console.fleet import Fleet

    fleet = Fleet(Settings(map_cache_dir=str(tmp_path), **FLEET))
    with pytest.raises(ValueError, match="session_id .* is not a safe path segment"):
        fleet.play_path(session_id)
