"""The specs say what the servers enforce: JSON Schema keywords only (never pydantic's own
`gt`/`ge`/`lt`/`le`), the bounds a body is checked against, one play body for env-sim and
the console."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from tests.libs.koholint.web.test_auth import LOOPBACK, apps, send

PYDANTIC_ONLY = {"gt", "ge", "lt", "le", "allow_inf_nan", "max_digits", "decimal_places"}


def keywords(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, key) of every key of every schema object in a spec, recursively."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield path, key
            yield from keywords(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from keywords(value, f"{path}/{index}")


def test_no_spec_uses_keywords_json_schema_lacks(tmp_path: Path):
    for name, app in apps(tmp_path).items():
        schemas = app.openapi()["components"]["schemas"]
        leaked = [(path, key) for path, key in keywords(schemas) if key in PYDANTIC_ONLY
                  and "/properties/" + key not in path + "/" + key]  # fmt: skip
        assert leaked == [], (name, leaked)


def test_play_max_seconds_is_an_exclusive_minimum_of_the_number(tmp_path: Path):
    specs = {name: app.openapi() for name, app in apps(tmp_path).items()}
    for name in ("env-sim", "console"):
        play = specs[name]["components"]["schemas"]["PlayRequest"]
        number, null = play["properties"]["max_seconds"]["anyOf"]
        assert (number["type"], number["exclusiveMinimum"], null["type"]) == ("number", 0, "null")
    assert (
        specs["console"]["components"]["schemas"]["PlayRequest"]
        == (specs["env-sim"]["components"]["schemas"]["PlayRequest"])
    )
    body = specs["console"]["paths"]["/v1/watch/env-sim/{session_id}/play"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PlayRequest"
    }


def test_the_console_refuses_a_play_body_env_sim_would_refuse(tmp_path: Path):
    console = apps(tmp_path)["console"]
    for body, field in (({"policy": "dance"}, "policy"), ({"max_seconds": 0}, "max_seconds"),
                        ({"speed": "fast"}, "speed"), ({"tempo": 2}, "tempo")):  # fmt: skip
        response = send_json(console, "/v1/watch/env-sim/s1/play", body)
        assert response.status_code == 422, response.text
        assert field in {error["field"] for error in response.json()["errors"]}, response.json()


def send_json(app: Any, path: str, body: dict[str, Any]) -> httpx.Response:
    import asyncio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=LOOPBACK, raise_app_exceptions=False)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://svc") as http,
        ):
            return await http.post(path, json=body)

    return asyncio.run(go())


__all__ = ["send"]
