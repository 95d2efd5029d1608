"""Command-line flags derived from a settings model: each setting is declared once, on its
model, with its bound and docstring, and its flag, its help and its environment variable come
from there (``koholint train``, ``evaluate``, ``train-reward-model``, ``play``, ``loop``,
``serve``).

A field ``env.frame_skip`` of a model whose environment prefix is ``KOHOLINT_TRAINER_`` is the
flag ``--env-frame-skip`` and the variable ``KOHOLINT_TRAINER_ENV__FRAME_SKIP``; its help is
the field's docstring, then ``(VARIABLE; default VALUE)``. A flag's value is text where the
field takes text, else JSON (``8``, ``0.25``, ``false``, ``[64, 64]``). Flags left out of the
command line are left out of the namespace, so a flag beats the environment, which beats the
default::

    add_setting_flags(parser, Settings)
    settings = Settings(**setting_values(parser.parse_args()))
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import json
import textwrap
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

NESTING = "__"
SETTING = "setting."
"""The namespace prefix of the settings' flags (``args.__dict__['setting.env.frame_skip']``)."""


def admits_text(annotation: Any) -> bool:
    """True when a field of this type takes a string as it is (str, string literals)."""
    origin = typing.get_origin(annotation)
    if annotation is str:
        return True
    if origin is Literal:
        return any(isinstance(arg, str) for arg in typing.get_args(annotation))
    if origin is Annotated:
        return admits_text(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(admits_text(arg) for arg in typing.get_args(annotation))
    return False


def from_text(annotation: Any, raw: str) -> Any:
    """A value from the environment or a flag: text where the field takes text, else JSON
    ("8", "0.25", "false", "[64, 64]"); undecodable text is left for pydantic to refuse."""
    if raw == "null":
        return None
    if admits_text(annotation):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def field_paths(
    model: type[BaseModel], prefix: str = "", *, leaves: Collection[str] = ()
) -> dict[str, FieldInfo]:
    """Every setting as a dotted path ('env.frame_skip'), nested models walked (but for the
    field names in `leaves`, set whole)."""
    paths: dict[str, FieldInfo] = {}
    for name, field in model.model_fields.items():
        nested = model_of(field.annotation)
        if nested is None or name in leaves:
            paths[prefix + name] = field
        else:
            paths.update(field_paths(nested, f"{prefix}{name}.", leaves=leaves))
    return paths


def environment_variable(prefix: str, path: str) -> str:
    """KOHOLINT_TRAINER_TOTAL_ENV_STEPS; KOHOLINT_TRAINER_ENV__FRAME_SKIP for env.frame_skip."""
    return prefix + path.replace(".", NESTING).upper()


def set_path(values: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if rest:
        set_path(values.setdefault(head, {}), rest, value)
    else:
        values[head] = value


def default_settings(model: type[BaseModel]) -> BaseModel:
    """The model's defaults, its ``service_defaults`` applied, without reading the environment."""
    return model.model_construct(**getattr(model, "service_defaults", {}))


def value_at(settings: Any, path: str) -> Any:
    for part in path.split("."):
        settings = getattr(settings, part)
    return settings


@functools.cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstrings under a class's annotated attributes (``name: int = 0`` then a string),
    read from its source: a mixin's fields keep them in the models that inherit it."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    found = {}
    for statement, after in zip(body, body[1:], strict=False):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):  # fmt: skip
            found[statement.target.id] = inspect.cleandoc(after.value.value)
    return found


def description_at(model: type[BaseModel], path: str) -> str:
    """The help of the setting at `path`: its field's description, else the docstring the
    class that declares it wrote under it."""
    head, _, rest = path.partition(".")
    field = model.model_fields[head]
    nested = model_of(field.annotation)
    if rest and nested is not None:
        return description_at(nested, rest)
    if field.description:
        return field.description
    owners = [cls for cls in model.__mro__ if head in vars(cls).get("__annotations__", {})]
    return next((attribute_docstrings(cls)[head] for cls in owners
                 if head in attribute_docstrings(cls)), "")  # fmt: skip


def flag_help(field: FieldInfo, variable: str, default: Any, description: str = "") -> str:
    """The field's docstring, then where else it is set and its default."""
    shown = default.model_dump() if isinstance(default, BaseModel) else default
    text = " ".join((description or field.description or "").split()).replace("%", "%%")
    return f"{text} ({variable}; default {shown})".lstrip()


def add_flag(group: Any, path: str, dest: str, field: FieldInfo, variable: str, default: Any,
             short: Sequence[str] = (), description: str = "") -> None:  # fmt: skip
    """One setting's flag: ``--path-of-the-field`` (and `short`), its help naming `variable`
    and `default`; a list takes one or more values."""
    many = typing.get_origin(field.annotation) is list
    annotation = typing.get_args(field.annotation)[0] if many else field.annotation
    choices = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else None
    options: dict[str, Any] = {"nargs": "+", "action": "extend"} if many else {}
    if is_flag(annotation):  # --greedy alone is true; --greedy false too
        options = {"nargs": "?", "const": True}
    metavar = "{" + ",".join(map(str, choices)) + "}" if choices else "VALUE"
    group.add_argument(*short, "--" + path.replace(".", "-").replace("_", "-"), dest=dest,
                       type=functools.partial(from_text, annotation), default=argparse.SUPPRESS,
                       help=flag_help(field, variable, default, description), choices=choices,
                       metavar=metavar, **options)  # fmt: skip


def is_flag(annotation: Any) -> bool:
    """Whether a field is a yes/no (bool, or bool or None)."""
    if annotation is bool:
        return True
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return bool in arguments and all(a in (bool, type(None)) for a in arguments)
    return typing.get_origin(annotation) is Annotated and is_flag(arguments[0])


def is_secret(field: FieldInfo) -> bool:
    return field.annotation is SecretStr


def prefix_of(model: type[BaseModel]) -> str:
    """The model's environment prefix: a settings model's ``env_prefix``, or a plain model's
    ``environment_prefix`` class variable."""
    prefix = getattr(model, "environment_prefix", None) or model.model_config.get("env_prefix")
    return str(prefix or "")


def variable_of(model: type[BaseModel], path: str) -> str:
    """The environment variable of the setting at `path` (a model's ``environment_names``
    rename a few, such as the ROM's KOHOLINT_ROM)."""
    return getattr(model, "environment_names", {}).get(path) or environment_variable(
        prefix_of(model), path
    )


def add_setting_flags(
    group: Any,
    model: type[BaseModel],
    *,
    short_flags: Mapping[str, Sequence[str]] | None = None,
    skip: Collection[str] = (),
    leaves: Collection[str] = (),
    dest_prefix: str = SETTING,
    defaults: Any = None,
) -> list[str]:
    """A flag per setting of `model` (nested models as --group-field) on `group` (a parser or
    an argument group), but for `skip` and secrets, which come from the environment alone
    (returned: their variables, for the help to name); `defaults` (a model instance)
    overrides the defaults shown."""
    shown = default_settings(model) if defaults is None else defaults
    secrets = []
    for path, field in field_paths(model, leaves=leaves).items():
        if path in skip:
            continue
        variable = variable_of(model, path)
        if is_secret(field):
            secrets.append(variable)
            continue
        add_flag(group, path, dest_prefix + path, field, variable, value_at(shown, path),
                 (short_flags or {}).get(path, ()), description_at(model, path))  # fmt: skip
    return secrets


def setting_values(args: argparse.Namespace, dest_prefix: str = SETTING) -> dict[str, Any]:
    """The settings given as flags, nested by their dotted paths (the model's keyword
    arguments)."""
    values: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if dest.startswith(dest_prefix):
            set_path(values, dest.removeprefix(dest_prefix), value)
    return values


def fields_of(*models: type[BaseModel]) -> set[str]:
    """The field names the given models declare (or inherit): settings a command leaves out."""
    return {name for model in models for name in model.model_fields}


def environment_values(
    model: type[BaseModel], environ: Mapping[str, str], *, leaves: Collection[str] = ()
) -> dict[str, Any]:
    """The settings of a plain model (not a pydantic-settings one, which reads its own) that
    `environ` sets, nested by their paths."""
    values: dict[str, Any] = {}
    for path, field in field_paths(model, leaves=leaves).items():
        raw = environ.get(variable_of(model, path))
        if raw:
            set_path(values, path, from_text(field.annotation, raw))
    return values


def flag_errors(error: ValidationError) -> str:
    """A settings model's validation error in the flags' names: ``--max-steps: Input should be
    greater than or equal to 1 (got 0)``."""
    problems = []
    for problem in error.errors():
        path = ".".join(str(part) for part in problem["loc"] if isinstance(part, str))
        flag = "--" + path.replace(".", "-").replace("_", "-") if path else "settings"
        problems.append(f"{flag}: {problem['msg']} (got {problem.get('input')!r})")
    return "; ".join(problems)
