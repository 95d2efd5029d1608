"""Hybrid control: the planner takes over in dialog/puzzle and the policy sees one transition."""

from __future__ import annotations

import gymnasium as gym
import pytest

from koholint.env.wrappers import PlannerControlWrapper
from koholint.env.zelda import Action, ZeldaEnv
from koholint.game.ram import RoomFlag
from koholint.planning.backends import RulesBackend
from koholint.planning.view import read_view


def make(start: str | None, **options: int) -> PlannerControlWrapper:
    env = ZeldaEnv(start_state=start, sticky_action_probability=0.0, cartridge_seed=0)
    return PlannerControlWrapper(env, RulesBackend(), **options)


def test_puzzle_takeover_is_one_transition() -> None:
    env = make("before_puzzle", enter_after=2)
    env.reset(seed=0)
    _, _, _, _, first = env.step(Action.NOOP)
    assert "planner" not in first  # one puzzle observation is not enough (enter_after=2)
    _, reward, terminated, truncated, info = env.step(Action.NOOP)
    assert info["planner"]["stopped"] == "cleared"
    assert info["planner"]["macros"] == 5
    assert info["planner"]["frames"] > 200
    assert read_view(env.unwrapped.gameboy).raw.room_status & RoomFlag.PUZZLE_SOLVED
    assert not terminated
    assert not truncated
    assert env.unwrapped._steps == 3  # two policy steps + one aggregated planner transition
    assert env.takeovers == 1
    _, _, _, _, after = env.step(Action.NOOP)
    assert "planner" not in after  # the room no longer is a puzzle


def test_dialog_takeover_rewards_the_purchase() -> None:
    env = make("before_shop", enter_after=1)
    env.reset(seed=0)
    env.step(Action.UP)  # face the shopkeeper
    _, reward, _, _, info = env.step(Action.A)
    assert info["planner"]["started_in"] == "dialog"
    assert info["planner"]["stopped"] == "cleared"
    assert info["reward_components"]["item"] == 1.0  # the heart container, bought by CHOOSE
    assert float(reward) > 0


def test_the_planner_starts_the_game_from_power_on() -> None:
    env = make(None, enter_after=2)  # power-on: the title screen, which the policy never saw
    env.reset(seed=0)
    _, _, _, _, first = env.step(Action.NOOP)
    assert "planner" not in first
    _, _, terminated, _, info = env.step(Action.NOOP)
    assert info["planner"]["started_in"] == "title"
    assert info["planner"]["stopped"] == "cleared"
    assert [d["macro"] for d in info["planner"]["decisions"]] == ["START_GAME"]
    assert read_view(env.unwrapped.gameboy).in_play
    assert not terminated
    _, _, _, _, after = env.step(Action.NOOP)
    assert "planner" not in after


def test_policy_steps_pass_through() -> None:
    env = make("start_of_play")
    env.reset(seed=0)
    for _ in range(20):
        _, _, _, _, info = env.step(Action.RIGHT)
        assert "planner" not in info
    assert env.takeovers == 0


def test_only_wraps_the_zelda_env() -> None:
    with pytest.raises(TypeError, match="ZeldaEnv"):
        PlannerControlWrapper(gym.make("CartPole-v1"), RulesBackend())
