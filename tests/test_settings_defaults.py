"""Each setting's default is written once.

The rule, as checked here:

- **settings models** are the pydantic models under ``libs/`` and ``services/`` that hold
  settings: every ``BaseSettings`` subclass, every model named ``*Settings`` or ``*Config`` or
  carrying an ``environment_prefix`` (a command's settings read from the environment by
  ``koholint.flags``), and every model these nest or inherit. They are found by importing every
  module of the library and the services and scanning for subclasses, so a new model is
  checked without being listed.
- a field **declared** (not inherited) in two settings models under one name is one setting
  mirrored — the loop's ``run_dir`` is the trainer's, ``koholint serve --host`` is a service's
  ``host`` — and the two declarations must have the same default. A default of ``None``
  declares none: it means "the other's default" and is not compared. Names that are different
  settings in different models are listed with why (``HOMONYMS``, and those of
  tests/test_architecture.py).
- within a service, a function parameter named after one of the service's settings with a
  written default (``Evaluator(state_pairs=4096)``) must default to the setting's default:
  better still, take the settings object whole.
"""

from __future__ import annotations

import ast
import importlib
import json
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from pydantic_settings import BaseSettings
from tests.test_architecture import HOMONYMS as DECLARED_TWICE_HOMONYMS
from tests.test_architecture import PYDANTIC_PACKAGES, SERVICES, modules

HOMONYMS = {
    **DECLARED_TWICE_HOMONYMS,
    "episodes": "the trainer's evaluation episodes and `koholint play`'s episodes per policy "
    "and start: two counts",
    "max_steps": "R_phi's Adam steps (reward model) and `koholint play`'s steps per episode",
    "refit_every": "the online loop's training iterations between refits and judged "
    "exploration's env steps between refits: two clocks",
    "batch_size": "segments the evaluator scores together and the segments SIL samples per "
    "update: two batches",
    "start": "where `koholint play` and `koholint explore` start and where the trainer's "
    "evaluation episodes start (power-on, as a player does): three starts",
    "out": "each command's own output folder",
    "noisy_accuracy": "the evaluator service's noisy judges and judged exploration's, whose "
    "own measured default the explorer hands to every `koholint evaluate` it runs",
}
"""Field names declared in two settings models as different settings, each with why."""


def project_modules() -> list[Any]:
    """Every module of the library and the services, imported."""
    return [importlib.import_module(name) for name in sorted(modules()) if name]


def is_settings_model(cls: type[Any]) -> bool:
    return (
        issubclass(cls, BaseSettings)
        or cls.__name__.endswith(("Settings", "Config"))
        or hasattr(cls, "environment_prefix")
    )


def settings_models(imported: list[Any]) -> list[type[BaseModel]]:
    """The settings models the modules define, with every model they nest or inherit."""
    found: list[type[BaseModel]] = []

    def visit(model: type[Any]) -> None:
        for cls in model.__mro__:
            if (not isinstance(cls, type) or not issubclass(cls, BaseModel) or cls in found
                    or cls.__module__.split(".")[0] in PYDANTIC_PACKAGES):  # fmt: skip
                continue
            found.append(cls)
            for field in cls.model_fields.values():
                annotation = field.annotation
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    visit(annotation)

    for module in imported:
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, BaseModel)
                    and value.__module__ == module.__name__ and is_settings_model(value)):  # fmt: skip
                visit(value)
    return found


def default_of(model: type[BaseModel], name: str) -> Any:
    """The default a model gives a field: its service's own (``service_defaults``) or the
    field's, factories called; as JSON where it can be, to compare."""
    overrides = getattr(model, "service_defaults", {})
    value = (
        overrides[name]
        if name in overrides
        else model.model_fields[name].get_default(call_default_factory=True)
    )
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return repr(value)


def conflicting_defaults(models: list[type[BaseModel]]) -> dict[str, dict[str, Any]]:
    """Field names declared in two or more of `models` with different defaults (None left
    out): name -> {model: default}."""
    declared: dict[str, dict[str, Any]] = {}
    for model in models:
        for name in vars(model).get("__annotations__", {}):
            if name in model.model_fields:
                default = default_of(model, name)
                if default is not None:
                    declared.setdefault(name, {})[f"{model.__module__}.{model.__qualname__}"] = (
                        default
                    )
    return {
        name: owners
        for name, owners in declared.items()
        if len({json.dumps(value, sort_keys=True) for value in owners.values()}) > 1
    }


@pytest.fixture(scope="module")
def models() -> list[type[BaseModel]]:
    return settings_models(project_modules())


def test_the_walk_finds_every_commands_settings(models: list[type[BaseModel]]) -> None:
    names = {f"{model.__module__}.{model.__qualname__}" for model in models}
    assert {
        "evaluator.config.Settings",
        "reward_model.config.Settings",
        "orchestrator.config.Settings",
        "trainer.ppo.config.TrainConfig",
        "koholint.baselines.settings.PlayCommandSettings",
        "koholint.cli.ServeSettings",
        "koholint.settings.StoreSettings",
    } <= names


def test_a_setting_declared_twice_has_one_default(models: list[type[BaseModel]]) -> None:
    conflicts = {
        name: owners
        for name, owners in conflicting_defaults(models).items()
        if name not in HOMONYMS
    }
    assert not conflicts, (
        f"settings declared with different defaults: {conflicts}; declare the setting once (a "
        "shared base in koholint.settings), default the mirror to None (the other's default), "
        "or, if they are different settings, name them apart or list them in HOMONYMS with why"
    )


def test_the_conflict_finder_finds_them() -> None:
    class Shared(BaseModel):
        store_url: str = "runs/store"

    class Service(Shared):
        service_defaults: ClassVar[dict[str, Any]] = {"store_url": "s3://bucket"}  # inherited
        state_pairs: int = 16_384
        stride: int | None = None

    class Command(BaseModel):
        state_pairs: int = 4096
        stride: int = 16  # the other defers (None)

    found = conflicting_defaults([Shared, Service, Command])
    assert list(found) == ["state_pairs"]
    assert sorted(found["state_pairs"].values()) == [4096, 16_384]


def written_defaults(source: str) -> list[tuple[str, int, Any]]:
    """(parameter, line, default) of every function parameter with a literal default."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        positional = arguments.posonlyargs + arguments.args
        pairs = list(zip(positional[len(positional) - len(arguments.defaults) :],
                         arguments.defaults, strict=True))  # fmt: skip
        pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                  if d is not None]  # fmt: skip
        for argument, default in pairs:
            try:
                value = ast.literal_eval(default)
            except ValueError:
                continue  # a name or a call: not written here
            found.append((argument.arg, default.lineno, value))
    return found


def service_settings() -> dict[str, type[BaseModel]]:
    return {
        path.parent.name: importlib.import_module(f"{path.parent.name}.config").Settings
        for path in sorted(SERVICES.glob("*/config.py"))
    }


def test_a_services_functions_default_as_its_settings() -> None:
    offenders = []
    for package, settings in service_settings().items():
        fields = set(settings.model_fields)
        for path in sorted((SERVICES / package).rglob("*.py")):
            if path.name == "config.py":
                continue
            for name, line, value in written_defaults(path.read_text()):
                if name in fields and value is not None and value != default_of(settings, name):
                    where = f"{path.relative_to(SERVICES.parent)}:{line}"
                    offenders.append(f"{where} {name}={value!r} (setting: {default_of(settings, name)!r})")  # fmt: skip
    assert not offenders, (
        f"function defaults that differ from the service's settings: {offenders}; take the "
        "settings object whole (or no default)"
    )


def test_the_written_default_finder_reads_literals_only() -> None:
    source = """
def make(store, *, state_pairs: int = 4096, seed=SEED, stride=None):
    def inner(samples=3, /, name="x"):
        ...
"""
    assert written_defaults(source) == [
        ("state_pairs", 2, 4096), ("stride", 2, None), ("samples", 3, 3), ("name", 3, "x"),
    ]  # fmt: skip
