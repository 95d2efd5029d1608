"""The path-finder that walks to the chest or locked door the demonstration opens and
opens it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from koholint.env.encoding import OBSERVATION_SIZE, SLOT_INDEX
from koholint.env.zelda import EnvConfig
from koholint.explore.demo import DemoTransitions, demo_transitions
from koholint.schemas.env import Action
from koholint.teachers.openings import (
    CHEST,
    DOOR,
    Opening,
    corrected_openings,
    demo_openings,
    opening_steps,
    opening_transitions,
)

WIN = Path(__file__).parents[4] / "benchmarks" / "results" / "win" / "explore-seed0-short.actions"
SWORD_ROOM = (0, 0, 32)  # the cartridge's overworld 0x20, the sword's chest


def synthetic_demo(
    rooms: list[int], opened: list[int], flag: str = "room_flag_4"
) -> DemoTransitions:
    """A demo through `rooms` (one room id a step), the room's chest bit as `opened` says,
    Link free to move."""
    obs = np.zeros((len(rooms), OBSERVATION_SIZE), np.float32)
    obs[:, SLOT_INDEX["room_id"]] = np.array(rooms) / 255
    obs[:, SLOT_INDEX["motion_normal"]] = 1.0
    obs[:, SLOT_INDEX[flag]] = np.array(opened, np.float32)
    return DemoTransitions(obs, np.zeros(len(rooms), np.int64), np.zeros(len(rooms), np.float32))


def test_walks_to_a_chest_start_in_its_room_before_it_opens():
    # room 1, then room 2 whose chest opens at step 9, then room 3 (its chest bit was set
    # before: entering a room with an open chest is no opening)
    rooms = [1] * 4 + [2] * 8 + [3] * 4
    opened = [0] * 4 + [0] * 5 + [1] * 3 + [1] * 4
    demo = synthetic_demo(rooms, opened)
    demo.observations[6, SLOT_INDEX["dialog_open"]] = 1.0
    assert demo_openings(demo, CHEST) == [Opening((0, 0, 2), 9)]
    assert demo_openings(demo, DOOR) == []
    assert [step for step, _ in opening_steps(demo, CHEST, every=2)] == [4, 8]  # 6: a dialog


def test_walks_to_a_door_start_once_the_rooms_key_is_held():
    # the door's room from step 0; the key taken at step 5, the door open at step 9
    demo = synthetic_demo([1] * 12, [0] * 9 + [1] * 3, flag="room_flag_2")
    demo.observations[5:, SLOT_INDEX["keys"]] = 1 / 255
    demo.observations[9:, SLOT_INDEX["keys"]] = 0.0
    assert demo_openings(demo, DOOR) == [Opening((0, 0, 1), 9)]
    assert [step for step, _ in opening_steps(demo, DOOR, every=1)] == [5, 6, 7, 8]


def test_a_chest_walk_needs_at_least_one_episode():
    demo = synthetic_demo([1, 1], [0, 1])
    with pytest.raises(ValueError, match="episodes 0"):
        opening_transitions(b"\x00", demo, EnvConfig(), CHEST, episodes=0)
    with pytest.raises(ValueError, match="corrected walks"):
        corrected_openings(b"", demo, EnvConfig(), DOOR, lambda observation, rng: 0, episodes=0)


def test_the_path_finder_opens_the_swords_chest_from_each_state_before_it():
    """Real PyBoy on a committed win, sticky actions on: every walk from the sword room's
    states before the chest opens ends with it open, its last taught step A; a policy that
    only presses LEFT never opens it and is labelled with the path-finder's steps."""
    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    (opening,) = demo_openings(demo, CHEST)
    assert opening.room == SWORD_ROOM
    report = opening_transitions(actions, demo, config, CHEST, episodes=2)
    assert report.starts >= 3  # 5 when written
    assert report.clean == report.episodes
    taught = report.transitions
    assert taught.observations.shape == (len(taught.actions), OBSERVATION_SIZE)
    assert (taught.actions == Action.A).sum() >= report.clean
    assert set(taught.actions.tolist()) <= {Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT,
                                            Action.A}  # fmt: skip
    left = corrected_openings(actions, demo, config, CHEST,
                              lambda observation, rng: int(Action.LEFT), episodes=1)  # fmt: skip
    assert left.clean == 0
    assert left.episodes == report.starts
    labels = left.transitions.actions.tolist()
    assert len(labels) >= left.episodes
    assert sum(label != Action.LEFT for label in labels) > len(labels) / 4


def test_the_path_finder_opens_the_dungeons_locked_door_with_its_key():
    """Real PyBoy on the same win: the walks from the locked door's room states before it
    opens, sticky actions on, end with the door open; their last steps push UP into it."""
    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    (opening,) = demo_openings(demo, DOOR)
    assert opening.room[0] == 1  # indoors: the dungeon
    report = opening_transitions(actions, demo, config, DOOR, episodes=2)
    assert report.starts >= 1
    assert report.clean == report.episodes
    assert set(report.transitions.actions.tolist()) <= {Action.UP, Action.DOWN, Action.LEFT,
                                                        Action.RIGHT}  # fmt: skip
