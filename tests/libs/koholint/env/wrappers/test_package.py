"""The wrappers package loads a wrapper's module on first use and names each one once."""

import importlib

import pytest

import koholint.env.wrappers as wrappers


def test_every_exported_name_resolves_to_the_class_of_its_module() -> None:
    assert sorted(wrappers.__all__) == sorted(wrappers.HOMES)
    for name in wrappers.__all__:
        module = importlib.import_module(f"koholint.env.wrappers.{wrappers.HOMES[name]}")
        assert getattr(wrappers, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchWrapper"):
        _ = wrappers.NoSuchWrapper  # type: ignore[attr-defined]
