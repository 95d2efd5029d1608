"""The fleet's services, built in this process with embedded defaults, for the monitoring tests:
which metric names they export, and real traffic for a real Prometheus to scrape.

A service whose package is not installed yet (services land one by one) is left out here and
named by `missing_services()`; the tests then check only what the present services export."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

# job name (as the ServiceMonitors and compose's Prometheus name it) -> Python package
PACKAGES = {
    "env-sim": "env_sim",
    "planner": "planner",
    "trainer": "trainer",
    "evaluator": "evaluator",
    "reward-model": "reward_model",
    "console": "console",
    "llm-local": "llm_local",
}
# Names a dashboard or alert may use that no service of ours exports: Prometheus' own target
# health, Argo CD's application metrics, and vLLM's (scraped from the model servers).
EXTERNAL_METRICS = {
    "up",
    "argocd_app_info",
    "argocd_app_sync_total",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:time_to_first_token_seconds_bucket",
}
CONSOLE_MAP_CACHE = Path(__file__).resolve().parents[2] / ".pytest_cache" / "koholint-console-map"
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created", ""),
    "gauge": ("",),
    "info": ("_info",),
    "untyped": ("",),
}


def present_services() -> list[str]:
    return [job for job, package in PACKAGES.items() if importlib.util.find_spec(package)]


def missing_services() -> list[str]:
    return [job for job in PACKAGES if job not in present_services()]


def series_names(exposition: str) -> set[str]:
    """Every series name a /metrics page can hold, from its families' types (a family with no
    sample yet, such as a labelled counter never incremented, still names its series)."""
    names = set()
    for family in text_string_to_metric_families(exposition):
        names |= {family.name + suffix for suffix in SUFFIXES[family.type]}
        names |= {sample.name for sample in family.samples}
    return names


def _env_sim(tmp: Path) -> FastAPI:
    from env_sim.app import create_app
    from env_sim.config import Settings

    return create_app(Settings(store_url=str(tmp / "store"), rom_dir=str(tmp / "roms"), workers=1))


def _planner(tmp: Path, env_sim_url: str = "", llm_url: str = "") -> FastAPI:
    from planner.app import create_app
    from planner.config import Settings

    values = {"env_sim_url": env_sim_url or "http://127.0.0.1:9"}
    if llm_url:  # the local backend: llm-local answers the LLM routes
        values |= {"backend": "local", "llm_base_url": llm_url}
    return create_app(Settings.model_validate(values))


def _trainer(tmp: Path) -> FastAPI:
    from trainer.app import create_app
    from trainer.config import Settings

    return create_app(Settings(store_url=str(tmp / "store"), run_dir=str(tmp / "runs")))


def _evaluator(tmp: Path) -> FastAPI:
    from evaluator.app import create_app
    from evaluator.config import Settings

    return create_app(Settings(store_url=str(tmp / "store"), backend="rules"))


def _reward_model(tmp: Path) -> FastAPI:
    from reward_model.app import create_app
    from reward_model.config import Settings

    return create_app(Settings(store_url=str(tmp / "store"), redis_url="", consume=False))


def _console(tmp: Path) -> FastAPI:
    from console.app import create_app
    from console.config import Settings

    # The console renders the cartridge's rooms once per ROM (~15 s) into a cache keyed by the
    # ROM's sha256, as it does when deployed: kept across test runs in pytest's cache folder.
    return create_app(Settings(map_cache_dir=str(CONSOLE_MAP_CACHE)))


def _llm_local(tmp: Path) -> FastAPI:
    from llm_local.app import create_app
    from llm_local.config import Settings

    return create_app(Settings(n_threads=1, n_ctx=2048))


BUILDERS: dict[str, Callable[..., FastAPI]] = {
    "env-sim": _env_sim,
    "planner": _planner,
    "trainer": _trainer,
    "evaluator": _evaluator,
    "reward-model": _reward_model,
    "console": _console,
    "llm-local": _llm_local,
}


def build(job: str, tmp: Path, **options: Any) -> FastAPI:
    """The service's app with embedded defaults, its files under `tmp`."""
    return BUILDERS[job](tmp, **options)
