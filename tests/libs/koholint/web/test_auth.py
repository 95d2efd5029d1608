"""One rule for who may change state, the same in every service: a bearer token beyond
loopback, `Bearer` and loopback parsed one way, forwarded headers believed only from the
operator's proxies; and `koholint serve` leaves uvicorn's own proxy handling off."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from koholint.web.auth import bearer_token, is_loopback, require_access

TOKEN = "a-real-token-0123"
EXTERNAL = ("203.0.113.9", 40000)
LOOPBACK = ("127.0.0.1", 40000)
READ_ONLY_POSTS = {
    # Computations that change nothing a later request sees.
    ("planner", "POST", "/v1/decide"), ("reward-model", "POST", "/v1/score"),
    ("llm-local", "POST", "/v1/chat/completions"),
    ("llm-local", "POST", "/{route}/v1/chat/completions"),
}  # fmt: skip


def apps(tmp_path: Path, **access: Any) -> dict[str, FastAPI]:
    from console.app import create_app as console
    from console.config import Settings as ConsoleSettings
    from env_sim.app import create_app as env_sim
    from env_sim.config import Settings as EnvSimSettings
    from evaluator.app import create_app as evaluator
    from evaluator.config import Settings as EvaluatorSettings
    from llm_local.app import create_app as llm_local
    from planner.app import create_app as planner
    from reward_model.app import create_app as reward_model
    from reward_model.config import Settings as RewardModelSettings
    from trainer.app import create_app as trainer
    from trainer.config import Settings as TrainerSettings

    store = str(tmp_path / "store")
    return {
        "evaluator": evaluator(EvaluatorSettings(consume=False, store_url=store, **access)),
        "reward-model": reward_model(RewardModelSettings(store_url=store, **access)),
        "env-sim": env_sim(EnvSimSettings(**access)),
        "trainer": trainer(TrainerSettings(store_url=store, run_dir=str(tmp_path), **access)),
        "console": console(ConsoleSettings(**access)),
        "planner": planner(),
        "llm-local": llm_local(),
    }


def state_changing(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route but GET/HEAD."""
    return [
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in sorted(route.methods - {"GET", "HEAD"})
    ]


def guarded(route: APIRoute) -> bool:
    return any(dependency.call is require_access for dependency in route.dependant.dependencies)


def send(app: FastAPI, method: str, path: str, client: tuple[str, int], **headers: str) -> Any:
    url = re.sub(r"\{[^}]+\}", "x", path)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=client, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as http:
            return await http.request(method, url, headers=headers, content=b"{}")

    return asyncio.run(go())


def test_every_state_changing_route_of_every_service_has_the_rule(tmp_path: Path):
    for name, app in apps(tmp_path).items():
        routes = {(method, route.path): route for route in app.routes if isinstance(route, APIRoute)
                  for method in route.methods}  # fmt: skip
        for method, path in state_changing(app):
            if (name, method, path) in READ_ONLY_POSTS:
                continue
            route = routes[(method, path)]
            assert guarded(route), f"{name} {method} {path} changes state without the rule"
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
            if (name, method, path) in READ_ONLY_POSTS:
                continue
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
            if (name, method, path) in READ_ONLY_POSTS:
                continue
            assert send(app, method, path, LOOPBACK, **forged).status_code == 401, (name, path)
            local = send(app, method, path, LOOPBACK, **{"X-Forwarded-For": "::1"})
            assert local.status_code != 401, (name, path)


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN} "])
def test_with_a_token_every_service_parses_bearer_alike(tmp_path: Path, header: str):
    for name, app in apps(tmp_path, token=TOKEN).items():
        for method, path in state_changing(app):
            if (name, method, path) in READ_ONLY_POSTS:
                continue
            assert send(app, method, path, EXTERNAL, Authorization=header).status_code != 401
            for wrong in ("", TOKEN, f"Token {TOKEN}", "Bearer nope"):
                response = send(app, method, path, LOOPBACK, Authorization=wrong)
                assert response.status_code == 401, (name, path, wrong)


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
