"""Predicates on recorded states and synthetic ones; hysteresis of the policy switch."""

from __future__ import annotations

import pytest

from koholint.game.emulator import Button, GameBoy
from koholint.game.ram import RoomFlag
from koholint.planning.switch import PolicySwitch, classify
from koholint.planning.view import (
    Situation,
    dialog_open,
    is_dialog_state,
    is_puzzle_state,
    puzzle_unsolved,
    read_view,
)

PUZZLE = (
    (1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
    (1, 0, 0, 0, 0, 0, 0, 0, 0, 1),
    (1, 0, 0, 5, 0, 0, 0, 0, 0, 1),
    (0, 0, 0, 2, 0, 0, 0, 0, 0, 8),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 8),
    (1, 0, 0, 0, 0, 6, 0, 0, 0, 1),
    (1, 0, 0, 0, 0, 0, 0, 0, 0, 1),
    (1, 1, 1, 1, 0, 0, 1, 1, 1, 1),
)


def test_dialog_predicate_ignores_the_box_position_bit() -> None:
    assert not dialog_open(0x00)
    assert not dialog_open(0x80)  # closed, box at the bottom
    assert dialog_open(0x09)
    assert dialog_open(0x8D)


def test_puzzle_predicate_on_synthetic_rooms() -> None:
    assert puzzle_unsolved(PUZZLE, 0x80)
    assert not puzzle_unsolved(PUZZLE, 0x80 | RoomFlag.PUZZLE_SOLVED)
    no_gate = tuple(tuple(0 if t == 8 else t for t in row) for row in PUZZLE)
    assert not puzzle_unsolved(no_gate, 0x80)
    solved = tuple(tuple(7 if t == 6 else (0 if t in (5, 8) else t) for t in row) for row in PUZZLE)
    assert not puzzle_unsolved(solved, 0x80)


@pytest.fixture(scope="module")
def gameboy() -> GameBoy:
    return GameBoy()


def situation_at(gameboy: GameBoy, name: str, press_a: bool = False) -> Situation:
    gameboy.reset(name)
    if press_a:
        gameboy.hold(Button.A)
        gameboy.tick(1)
        gameboy.hold(Button.NONE)
        gameboy.tick(1)
    return read_view(gameboy).situation()


@pytest.mark.parametrize(
    ("name", "press_a", "dialog", "puzzle"),
    [
        ("start_of_play", False, False, False),
        ("before_npc", False, False, False),
        ("before_npc", True, True, False),
        ("before_shop", True, True, False),
        ("before_puzzle", False, False, True),
        ("dungeon_entrance", False, False, False),
        ("title", False, False, False),
    ],
)
def test_predicates_on_recorded_states(
    gameboy: GameBoy, name: str, press_a: bool, dialog: bool, puzzle: bool
) -> None:
    situation = situation_at(gameboy, name, press_a)
    assert is_dialog_state(situation) is dialog
    assert is_puzzle_state(situation) is puzzle


def test_enter_after_n_and_leave_after_m() -> None:
    switch = PolicySwitch(enter_after=2, leave_after=3)
    assert [switch.observe(m) for m in ("dialog", "policy", "dialog", "dialog")] == [
        "policy", "policy", "policy", "dialog",
    ]  # fmt: skip
    # a flicker of policy frames shorter than leave_after keeps the planner in control
    assert [switch.observe(m) for m in ("policy", "policy", "dialog")] == ["dialog"] * 3
    assert [switch.observe(m) for m in ("policy", "policy", "policy")] == [
        "dialog", "dialog", "policy",
    ]  # fmt: skip


def test_switching_between_planner_modes_uses_enter_after() -> None:
    switch = PolicySwitch(enter_after=2, leave_after=1, mode="puzzle")
    assert switch.observe("dialog") == "puzzle"
    assert switch.observe("dialog") == "dialog"


def test_classify_and_bad_settings() -> None:
    assert classify(True, True) == "dialog"
    assert classify(False, True) == "puzzle"
    assert classify(False, False) == "policy"
    assert classify(True, True, title=True) == "title"
    with pytest.raises(ValueError, match=">= 1"):
        PolicySwitch(enter_after=0)
