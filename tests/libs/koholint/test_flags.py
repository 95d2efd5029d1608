"""Flags, their help and environment variables derived from a settings model: a flag beats the
variable, which beats the default; a mixin's docstrings reach the help."""

from __future__ import annotations

import argparse
from typing import ClassVar, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from koholint.flags import (
    add_setting_flags,
    environment_values,
    flag_errors,
    setting_values,
)


class Store(BaseModel):
    store_url: str = "runs/store"
    """where things are kept"""


class Game(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)

    frame_skip: int = Field(4, ge=1, le=16)
    """frames per step"""


class Command(Store):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    environment_prefix: ClassVar[str] = "KOHOLINT_TEST_"
    environment_names: ClassVar[dict[str, str]] = {"rom": "KOHOLINT_ROM"}

    episodes: int = Field(1, ge=1, le=100)
    """episodes to play"""
    greedy: bool | None = None
    """take the most likely action"""
    policy: list[str] = Field(default_factory=lambda: ["random"])
    """who plays"""
    planner: Literal["rules", "off"] = "rules"
    """hybrid control"""
    token: SecretStr = SecretStr("")
    """a secret"""
    rom: str = ""
    """a ROM"""
    game: Game = Game()


def parse(argv: list[str], environ: dict[str, str] | None = None) -> Command:
    parser = argparse.ArgumentParser()
    secrets = add_setting_flags(parser, Command)
    assert secrets == ["KOHOLINT_TEST_TOKEN"]  # never a flag
    args = parser.parse_args(argv)
    return Command(**{**environment_values(Command, environ or {}), **setting_values(args)})


def test_a_flag_beats_the_variable_which_beats_the_default() -> None:
    assert parse([]) == Command()
    environ = {"KOHOLINT_TEST_EPISODES": "5", "KOHOLINT_TEST_GAME__FRAME_SKIP": "8",
               "KOHOLINT_ROM": "my.gb"}  # fmt: skip
    from_environment = parse([], environ)
    assert (from_environment.episodes, from_environment.game.frame_skip) == (5, 8)
    assert from_environment.rom == "my.gb"
    flagged = parse(["--episodes", "7", "--game-frame-skip", "2"], environ)
    assert (flagged.episodes, flagged.game.frame_skip, flagged.rom) == (7, 2, "my.gb")


def test_yes_no_lists_and_choices_read_as_a_user_types_them() -> None:
    assert parse(["--greedy"]).greedy is True
    assert parse(["--greedy", "false"]).greedy is False
    assert parse(["--policy", "noop", "random", "--policy", "explorer"]).policy == [
        "noop", "random", "explorer",
    ]  # fmt: skip
    with pytest.raises(SystemExit):
        parse(["--planner", "sometimes"])


def test_the_help_names_each_settings_variable_and_default(capsys) -> None:
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, Command, short_flags={"store_url": ["--store"]})
    text = " ".join(parser.format_help().split())
    assert "episodes to play (KOHOLINT_TEST_EPISODES; default 1)" in text
    assert "frames per step (KOHOLINT_TEST_GAME__FRAME_SKIP; default 4)" in text
    # a mixin's docstring, though the mixin does not collect docstrings itself
    assert "--store VALUE, --store-url VALUE where things are kept" in text
    assert "(KOHOLINT_ROM; default )" in text
    assert "--token" not in text


def test_errors_name_the_flag() -> None:
    with pytest.raises(ValidationError) as caught:
        parse(["--episodes", "0"])
    assert flag_errors(caught.value) == (
        "--episodes: Input should be greater than or equal to 1 (got 0)"
    )
