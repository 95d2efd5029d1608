"""One rule for who may change state, the same in every service: a bearer token beyond
loopback, `Bearer` and loopback parsed one way, forwarded headers believed only from the
operator's proxies; and `koholint serve` leaves uvicorn's own proxy handling off. Every route
has the rule but the open ones, and docs/operations.md's table of those is the apps' own."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from koholint.web.auth import (
    READ_ONLY_WHY,
    SHARED_OPEN_ROUTES,
    bearer_token,
    is_guarded,
    is_loopback,
    open_routes,
    served_routes,
)

TOKEN = "a-real-token-0123"
EXTERNAL = ("203.0.113.9", 40000)
LOOPBACK = ("127.0.0.1", 40000)
SERVICES = ["console", "env-sim", "evaluator", "llm-local", "planner", "reward-model", "trainer"]
OPERATIONS = Path(__file__).parents[4] / "docs" / "operations.md"
OPEN_ROUTES_HEADING = "### Open routes"
EVERY_SERVICE = "every service"


def app_of(name: str, tmp_path: Path, **access: Any) -> FastAPI:
    """The service `name`'s app, with `access` (token, trusted_proxies) in its settings."""
    store = str(tmp_path / "store")
    if name == "console":
        from console.app import create_app
        from console.config import Settings

        return create_app(Settings(**access))
    if name == "env-sim":
        from env_sim.app import create_app as env_sim
        from env_sim.config import Settings as EnvSimSettings

        return env_sim(EnvSimSettings(**access))
    if name == "evaluator":
        from evaluator.app import create_app as evaluator
        from evaluator.config import Settings as EvaluatorSettings

        return evaluator(EvaluatorSettings(consume=False, store_url=store, **access))
    if name == "llm-local":
        from llm_local.app import create_app as llm_local
        from llm_local.config import Settings as LlmLocalSettings

        return llm_local(LlmLocalSettings(**access))
    if name == "planner":
        from planner.app import create_app as planner
        from planner.config import Settings as PlannerSettings

        return planner(PlannerSettings(**access))
    if name == "reward-model":
        from reward_model.app import create_app as reward_model
        from reward_model.config import Settings as RewardModelSettings

        return reward_model(RewardModelSettings(store_url=store, **access))
    from trainer.app import create_app as trainer
    from trainer.config import Settings as TrainerSettings

    return trainer(TrainerSettings(store_url=store, run_dir=str(tmp_path), **access))


def apps(tmp_path: Path, **access: Any) -> dict[str, FastAPI]:
    return {name: app_of(name, tmp_path, **access) for name in SERVICES}


def state_changing(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route but GET/HEAD, included routers' too."""
    found = [(method, path) for method, path, _ in served_routes(app) if method != "GET"]
    assert found, "no state-changing route found: the walk over the app's routes is broken"
    return found


def send(app: FastAPI, method: str, path: str, client: tuple[str, int], **headers: str) -> Any:
    url = re.sub(r"\{[^}]+\}", "x", path)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=client, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as http:
            return await http.request(method, url, headers=headers, content=b"{}")

    return asyncio.run(go())


def test_every_state_changing_route_of_every_service_has_the_rule(tmp_path: Path):
    for name, app in apps(tmp_path).items():
        routes = {(method, path): dependant for method, path, dependant in served_routes(app)}
        for method, path in state_changing(app):
            guarded = is_guarded(routes[(method, path)])
            assert guarded, f"{name} {method} {path} changes state without the rule"
            assert "401" in app.openapi()["paths"][path][method.lower()]["responses"], path


@pytest.mark.parametrize(
    ("client", "headers", "allowed"),
    [
        (EXTERNAL, {}, False),
        (LOOPBACK, {}, True),
        # A proxy on this host the operator did not name: its own address is what counts.
        (LOOPBACK, {"X-Forwarded-For": "203.0.113.9"}, True),
        (EXTERNAL, {"X-Forwarded-For": "127.0.0.1"}, False),  # a claim, not believed
    ],
)
def test_without_a_token_only_loopback_changes_state(
    tmp_path: Path, client: tuple[str, int], headers: dict[str, str], allowed: bool
):
    for name, app in apps(tmp_path).items():
        for method, path in state_changing(app):
            response = send(app, method, path, client, **headers)
            assert (response.status_code != 401) is allowed, (name, method, path, response.text)
            if not allowed:
                assert response.headers["content-type"] == "application/problem+json"


def test_behind_a_trusted_proxy_the_forwarded_client_counts(tmp_path: Path):
    proxied = apps(tmp_path, trusted_proxies=["127.0.0.0/8"])
    # The client wrote "127.0.0.1" itself; the proxy appended the address it came from.
    forged = {"X-Forwarded-For": "127.0.0.1, 203.0.113.9"}
    for name, app in proxied.items():
        for method, path in state_changing(app):
            assert send(app, method, path, LOOPBACK, **forged).status_code == 401, (name, path)
            local = send(app, method, path, LOOPBACK, **{"X-Forwarded-For": "::1"})
            assert local.status_code != 401, (name, path)


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN} "])
def test_with_a_token_every_service_parses_bearer_alike(tmp_path: Path, header: str):
    for name, app in apps(tmp_path, token=TOKEN).items():
        for method, path in state_changing(app):
            assert send(app, method, path, EXTERNAL, Authorization=header).status_code != 401
            for wrong in ("", TOKEN, f"Token {TOKEN}", "Bearer nope"):
                response = send(app, method, path, LOOPBACK, Authorization=wrong)
                assert response.status_code == 401, (name, path, wrong)


def documented_open_routes() -> dict[str, dict[str, str]]:
    """docs/operations.md's table of open routes: service -> {"METHOD path": why}."""
    section = OPERATIONS.read_text().split(OPEN_ROUTES_HEADING, 1)[1]
    section = re.split(r"\n#{1,3} ", section, maxsplit=1)[0]
    table: dict[str, dict[str, str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] == "service":
            continue
        if set(cells[0]) <= {"-", " "}:
            continue  # the header's rule
        service, route, why = cells
        table.setdefault(service, {})[route.strip("`")] = why
    return table


def table_rows(open_by_service: dict[str, list[str]]) -> str:
    """The table's rows as they should read (the why of each read is the docs' own)."""
    rows = [f"| {EVERY_SERVICE} | `{route}` | {why} |" for route, why in SHARED_OPEN_ROUTES.items()]
    rows += [f"| {name} | `{route}` | {READ_ONLY_WHY}: ... |"
             for name, routes in open_by_service.items() for route in routes]  # fmt: skip
    return "\n".join(rows)


@pytest.mark.parametrize("name", SERVICES)
def test_with_a_token_every_route_but_the_open_ones_answers_401(tmp_path: Path, name: str):
    """The routes come from the app itself: a new route either has the rule or is in the
    docs' table of open routes (and then the next test wants it to be a read)."""
    app = app_of(name, tmp_path, token=TOKEN)
    documented = set(documented_open_routes().get(name, {})) | set(SHARED_OPEN_ROUTES)
    checked = 0
    for method, path, _ in served_routes(app):
        if f"{method} {path}" in documented:
            continue
        for client in (EXTERNAL, LOOPBACK):
            response = send(app, method, path, client)
            assert response.status_code == 401, (
                f"{name} {method} {path} answers {response.status_code} without the token: "
                "give it the rule (ControlDep) or, if it only reads, add it to the table of "
                "open routes in docs/operations.md"
            )
            assert response.headers["content-type"] == "application/problem+json"
        checked += 1
    assert checked, f"{name} has no route that needs the token"


def test_the_docs_table_of_open_routes_is_the_apps_own(tmp_path: Path):
    documented = documented_open_routes()
    assert documented.pop(EVERY_SERVICE) == SHARED_OPEN_ROUTES
    actual: dict[str, list[str]] = {}
    for name, app in apps(tmp_path, token=TOKEN).items():
        found = open_routes(app)
        assert set(SHARED_OPEN_ROUTES) <= set(found), name
        actual[name] = [route for route in found if route not in SHARED_OPEN_ROUTES]
        reads = [route for route in actual[name] if route.startswith("GET ")]
        assert reads == actual[name], f"{name}: only reads may be open, not {actual[name]}"
    assert {name: sorted(rows) for name, rows in documented.items()} == actual, (
        "docs/operations.md's table of open routes differs from the apps; it should list:\n"
        + table_rows(actual)
    )
    for name, rows in documented.items():
        for route, why in rows.items():
            assert why, (name, route, "say why it is open")
            assert why != f"{READ_ONLY_WHY}: ...", (name, route, "say what it reads")


def test_loopback_and_bearer_parsing():
    for host in ("localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "::1", "[::1]",
                 "::ffff:127.0.0.1"):  # fmt: skip
        assert is_loopback(host), host
    for host in (None, "", "10.0.0.1", "example.com", "localhost.example.com", "::ffff:10.0.0.1"):
        assert not is_loopback(host), host
    assert bearer_token("Bearer abc") == bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Token abc") is bearer_token("abc") is bearer_token("Bearer ") is None


def test_koholint_serve_leaves_forwarded_headers_to_the_rule(monkeypatch: pytest.MonkeyPatch):
    import uvicorn

    from koholint import cli

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append(kwargs))
    monkeypatch.setenv("KOHOLINT_EVALUATOR_HOST", "127.0.0.1")
    assert cli.main(["serve", "evaluator", "--port", "1"]) == 0
    assert calls[0]["proxy_headers"] is False
    assert calls[0]["forwarded_allow_ips"] == ""
