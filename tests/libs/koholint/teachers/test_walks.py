"""The path-finder whose clean walks to each room's exit join the demonstration in the
warm start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from koholint.env.encoding import OBSERVATION_SIZE, SLOT_INDEX
from koholint.env.zelda import EnvConfig
from koholint.explore.demo import DemoTransitions, demo_transitions
from koholint.schemas.env import Action
from koholint.teachers.base import DONE
from koholint.teachers.walks import (
    Exit,
    _route_label,
    corrected_route,
    corrected_walks,
    demo_exits,
    route_exits,
    walk_steps,
    walk_transitions,
)

RESULTS = Path(__file__).parents[4] / "benchmarks" / "results" / "win"
WIN = RESULTS / "explore-seed0-short.actions"
ERRANDS_SEED0 = RESULTS / "errands-2026-11-28" / "seed0-369.actions"


def synthetic_demo(rooms: list[int], keys: list[int] | None = None) -> DemoTransitions:
    """A demo through `rooms` (one room id a step), Link free to move and facing right,
    one pixel further right each step."""
    obs = np.zeros((len(rooms), OBSERVATION_SIZE), np.float32)
    obs[:, SLOT_INDEX["room_id"]] = np.array(rooms) / 255
    obs[:, SLOT_INDEX["motion_normal"]] = 1.0
    obs[:, SLOT_INDEX["facing_right"]] = 1.0
    obs[:, SLOT_INDEX["link_x"]] = np.arange(len(rooms)) * 4 / 160
    obs[:, SLOT_INDEX["link_y"]] = 40 / 128
    if keys is not None:
        obs[:, SLOT_INDEX["keys"]] = np.array(keys) / 255
    return DemoTransitions(obs, np.zeros(len(rooms), np.int64), np.zeros(len(rooms), np.float32))


def test_an_exit_is_the_cell_and_facing_of_the_last_step_in_the_room():
    demo = synthetic_demo([1] * 10 + [2] * 5 + [3] * 3)
    assert demo_exits(demo) == [
        Exit((0, 0, 1), (0, 0, 2), 9, (2, 2), "right"),  # x 36 px, y 40 px
        Exit((0, 0, 2), (0, 0, 3), 14, (3, 2), "right"),
    ]


def test_walks_start_once_the_rooms_business_is_done_and_skip_detours():
    # room 1, a detour to room 2 and back, the key taken in room 1 at step 14, then room 3
    rooms = [1] * 6 + [2] * 4 + [1] * 10 + [3] * 4
    keys = [0] * 14 + [1] * 10
    steps = walk_steps(synthetic_demo(rooms, keys), every=2)
    by_step = {step: exit_.to for step, exit_ in steps}
    # the first visit's exit into room 2 is walked to (its progress is not seen again in
    # room 1); the second visit only after the key, toward room 3
    assert by_step == {0: (0, 0, 2), 2: (0, 0, 2), 4: (0, 0, 2), 6: (0, 0, 1), 8: (0, 0, 1),
                       14: (0, 0, 3), 16: (0, 0, 3), 18: (0, 0, 3)}  # fmt: skip


def test_a_room_left_twice_with_the_same_progress_is_walked_to_its_last_exit():
    rooms = [1] * 6 + [2] * 4 + [1] * 6 + [3] * 2  # nothing changes in room 1: a loop
    steps = walk_steps(synthetic_demo(rooms), every=2)
    assert [(step, exit_.to) for step, exit_ in steps if exit_.room == (0, 0, 1)] == [
        (10, (0, 0, 3)), (12, (0, 0, 3)), (14, (0, 0, 3))]  # fmt: skip


def test_no_walk_starts_while_link_is_not_free_to_move():
    demo = synthetic_demo([1] * 10 + [2] * 2)
    demo.observations[4, SLOT_INDEX["dialog_open"]] = 1.0
    demo.observations[6, SLOT_INDEX["in_transition"]] = 1.0
    assert [step for step, _ in walk_steps(demo, every=2)] == [0, 2, 8]


def test_a_walk_needs_at_least_one_episode():
    demo = synthetic_demo([1, 2])
    with pytest.raises(ValueError, match="episodes 0"):
        walk_transitions(b"\x00", demo, EnvConfig(), episodes=0)


def test_the_walker_leaves_the_demonstrations_rooms_by_its_exits():
    """Real PyBoy on a committed win: the walks reach the demonstration's next rooms, and
    their steps are the d-pad's on the observations the walker saw."""
    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    report = walk_transitions(actions, demo, config, episodes=1)
    assert report.starts >= 30  # 42 when written
    assert report.clean >= 0.95 * report.episodes  # 42 of 42
    walked = report.transitions
    assert walked.observations.shape == (len(walked.actions), OBSERVATION_SIZE)
    assert set(walked.actions.tolist()) <= {Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT}
    assert len(walked.actions) > 5 * report.clean


def test_the_walker_leaves_the_dungeons_stairs_room_by_its_north_exit():
    """The up-stairs stand between the warp and the room's north exit, and stepping on them
    leaves the dungeon (17 of seed 1's 40 losses): every walk from the room's demo states,
    under sticky actions, reaches the key hall instead (a walk into another room fails)."""
    from koholint.teachers.base import healed_states
    from koholint.teachers.walks import _walk

    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25})
    demo = demo_transitions(actions, config)
    stairs_room = [(step, exit_) for step, exit_ in walk_steps(demo, 8)
                   if exit_.room == (1, 0, 16)]  # fmt: skip
    assert stairs_room
    assert stairs_room[0][1].to == (1, 0, 8)
    states = healed_states(actions, config, [step for step, _ in stairs_room], 8)
    assert len(states) == len(stairs_room)
    for state, (_, exit_) in zip(states, stairs_room, strict=True):
        for seed in range(3):
            assert _walk(state.state, exit_, config, seed) is not None, (state.step, seed)


def test_a_clone_that_only_presses_up_is_corrected_where_up_goes_nowhere():
    """Real PyBoy, DAgger's labels on seed 0's errand demo: a policy sure of UP (what a
    clone of it did against the top wall of overworld 0x21) walks from every walk state
    under sticky actions; it reaches the rooms up the route and no other, and the walker
    labels the states it pressed into walls with the steps that lead to the exit."""
    actions = ERRANDS_SEED0.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25})
    demo = demo_transitions(actions, config)
    exits = {exit_.room: exit_ for _, exit_ in walk_steps(demo, 8)}
    report = corrected_walks(actions, demo, config, lambda observation, rng: int(Action.UP),
                             episodes=1)  # fmt: skip
    assert report.starts == report.episodes == len(walk_steps(demo, 8))
    upward = sum(1 for exit_ in exits.values() if exit_.facing == "up")
    assert 0 < report.clean < report.episodes
    assert upward > 0
    labels = report.transitions.actions.tolist()
    assert set(labels) <= {Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT}
    assert len(labels) >= report.episodes  # every walk was labelled from its first state
    corrections = [label for label in labels if label != Action.UP]
    assert len(corrections) > len(labels) / 4  # pressing up was wrong in a fair share
    assert report.transitions.observations.shape == (len(labels), OBSERVATION_SIZE)


def test_corrected_walks_need_at_least_one_episode():
    with pytest.raises(ValueError, match="corrected walks"):
        corrected_walks(b"", synthetic_demo([1]), EnvConfig.parse({}),
                        lambda observation, rng: 0, episodes=0)  # fmt: skip


def test_the_route_leaves_a_room_as_the_demonstration_last_did_whatever_the_kills():
    # room 1 with no key out to room 2 and back, a kill and the key in room 1, out to room 3
    rooms = [1] * 6 + [2] * 4 + [1] * 10 + [3] * 4
    demo = synthetic_demo(rooms, keys=[0] * 14 + [1] * 10)
    demo.observations[12:, SLOT_INDEX["kills"]] = 1 / 255
    exits = route_exits(demo)
    no_key, one_key = (0,) * 10, (1,) + (0,) * 9
    assert {where: exit_.to for where, exit_ in exits.items()} == {
        ((0, 0, 1), no_key): (0, 0, 2), ((0, 0, 2), no_key): (0, 0, 1),
        ((0, 0, 1), one_key): (0, 0, 3)}  # fmt: skip
    # a policy that beat an enemy the demonstration did not is on the same route
    label = _route_label(exits, ((0, 0, 3), one_key))
    assert label(None, demo.observations[20]) == DONE  # the goal: room 3 with the key
    busy = demo.observations[15].copy()
    busy[SLOT_INDEX["dialog_open"]] = 1.0
    assert label(None, busy) is None  # not free to move: no step to label


def test_route_episodes_need_at_least_one_episode():
    with pytest.raises(ValueError, match="route episodes"):
        corrected_route(b"", synthetic_demo([1]), EnvConfig.parse({}),
                        lambda observation, rng: 0, start=0, episodes=0)  # fmt: skip


def test_a_clone_that_only_presses_up_is_labelled_on_its_way_from_the_curriculums_start():
    """Real PyBoy on seed 0's errand demo, from a demo state mid-route: a policy sure of UP
    is labelled wherever it goes in the route's rooms, with the walker's steps toward the
    exits, and no episode reaches the fourth room ahead; from the last room (only the win
    ahead) nothing is played."""
    from koholint.teachers.base import room_of

    actions = ERRANDS_SEED0.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25})
    demo = demo_transitions(actions, config)
    exits = demo_exits(demo)
    start = next(step for step, _ in walk_steps(demo, 8) if step > exits[2].last)
    report = corrected_route(actions, demo, config, lambda observation, rng: int(Action.UP),
                             start=start, episodes=2)  # fmt: skip
    assert (report.starts, report.episodes, report.clean) == (1, 2, 0)
    labels = report.transitions.actions.tolist()
    assert set(labels) <= {Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT}
    assert len([label for label in labels if label != Action.UP]) > 8
    route_rooms = {exit_.room for exit_ in exits}
    assert {room_of(row) for row in report.transitions.observations} <= route_rooms
    in_the_last_room = (exits[-1].last // 8 + 1) * 8
    assert in_the_last_room < len(actions)
    ended = corrected_route(actions, demo, config, lambda observation, rng: int(Action.UP),
                            start=in_the_last_room, episodes=1)  # fmt: skip
    assert (ended.starts, ended.episodes, len(ended.transitions.actions)) == (0, 0, 0)


MEDIUM_1_DEMO = (Path(__file__).parents[4] / "benchmarks" / "results" / "worlds"
                 / "phase-two-2026-11-29" / "medium-1-demo.actions")  # fmt: skip


@pytest.fixture(scope="module")
def medium_1_first_walk(tmp_path_factory):
    """Generated world medium 1 as the default world: its demonstration's start, where the
    elder stands between Link and the first room's exit, and that exit."""
    from koholint.game.rom import bundled_cartridge, playing
    from koholint.game.worldgen import generate, write_world
    from koholint.teachers.base import healed_states

    folder = tmp_path_factory.mktemp("worlds") / "medium-1"
    write_world(generate(1, "medium"), bundled_cartridge().read_bytes(), folder)
    with playing(folder):
        actions = MEDIUM_1_DEMO.read_bytes()
        config = EnvConfig.parse({"sticky_action_probability": 0.0, "reward_mode": "progress"})
        first = demo_exits(demo_transitions(actions, config))[0]
        (start,) = healed_states(actions, config, [0], 8)
        yield start.state, first, config


def test_the_walker_goes_around_the_elder(medium_1_first_walk, monkeypatch):
    """Real PyBoy on medium 1: the path-finder's steps with the elder's cell a wall leave
    the first room; through his cell (the tiles alone) Link presses into him and stays."""
    from koholint.game.ram import RamReader
    from koholint.teachers import walks

    state, first, config = medium_1_first_walk
    assert first.room == (0, 0, 19)
    assert all(walks._walk(state, first, config, seed) is not None for seed in range(2))

    def tiles_only(env):
        return RamReader(env.gameboy.memory, banked=env.gameboy.rom.cgb).room_objects()

    monkeypatch.setattr(walks, "walkable_tiles", tiles_only)
    assert not any(walks._walk(state, first, config, seed) is not None for seed in range(2))
