"""`koholint serve llm-local` finds the app factory."""

from __future__ import annotations

import importlib

from fastapi import FastAPI

from koholint.cli import installed_services


def test_cli_serves_llm_local_through_its_factory() -> None:
    module, _, factory = installed_services()["llm-local"].partition(":")
    assert module == "llm_local.app"
    assert callable(getattr(importlib.import_module(module), factory))


def test_app_has_the_openai_routes() -> None:
    from llm_local.app import create_app
    from llm_local.config import Settings

    app = create_app(Settings())
    assert isinstance(app, FastAPI)
    paths = set(app.openapi()["paths"])
    assert {"/v1/chat/completions", "/{route}/v1/chat/completions", "/v1/models"} <= paths
    assert {"/healthz", "/readyz"} <= paths
