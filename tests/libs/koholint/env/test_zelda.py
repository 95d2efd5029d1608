"""koholint/Zelda-v1: Gymnasium conformance, determinism, rewards, sticky actions, latches, bad input."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import koholint
from koholint.baselines.policies import WALKTHROUGH_ENV, WalkthroughPolicy
from koholint.env.encoding import (
    FLAG_SLOTS,
    FLAGS_SIZE,
    MEMORY_SIZE,
    MEMORY_SLOTS,
    OBSERVATION_SIZE,
    encoder,
)
from koholint.env.zelda import Action, EnvConfigError, ZeldaEnv, progress_level
from koholint.game.emulator import GameBoy
from koholint.game.ram import RamAddress
from koholint.game.rom import TITLE_START, bundled_cartridge, header_checksum
from koholint.game.savestate import SaveStateRomMismatchError
from koholint.game.state import GameState
from koholint.game.states import UnknownStateError, load_named_state
from koholint.game.walkthrough import load_walkthrough

ROLLOUT = """
import hashlib, sys
import numpy as np
from koholint.env.zelda import ZeldaEnv
env = ZeldaEnv(sticky_action_probability=0.25, render_mode="rgb_array")
env.reset(seed=7)
rng = np.random.default_rng(3)
for _ in range(300):
    env.step(int(rng.integers(9)))
    memory = env.gameboy.memory
    ram = hashlib.sha1(bytes(memory[0xC000:0xE000]) + bytes(memory[0xFF80:0xFFFF])).hexdigest()
    frame = hashlib.sha1(env.render().tobytes()).hexdigest()
    print(ram, frame)
"""


@pytest.fixture
def env():
    environment = ZeldaEnv()
    yield environment
    environment.close()


def rollout_hashes() -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", ROLLOUT], capture_output=True, text=True, check=True
    )
    return result.stdout.splitlines()


def test_check_env_passes(env):
    check_env(gym.make(koholint.ENV_ID).unwrapped)


def test_registered_with_gymnasium():
    made = gym.make(koholint.ENV_ID, frame_skip=2, reward_mode="progress")
    observation, info = made.reset(seed=0)
    assert made.observation_space.contains(observation)
    assert made.unwrapped.config.frame_skip == 2
    GameState.model_validate(info["state"])
    made.close()


def test_same_seeded_rollout_is_identical_twice_in_process_and_across_processes():
    exec_globals: dict = {}
    lines_here: list[str] = []
    code = ROLLOUT.replace("print(ram, frame)", "lines.append(f'{ram} {frame}')")
    for _ in range(2):
        exec_globals = {"lines": []}
        exec(code, exec_globals)
        lines_here.append("\n".join(exec_globals["lines"]))
    assert lines_here[0] == lines_here[1]
    first, second = rollout_hashes(), rollout_hashes()
    assert first == second == lines_here[0].splitlines()
    assert len(set(first)) > 100  # the rollout really moves through different states


def test_observation_is_128_floats_in_range(env):
    observation, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        observation, *_ = env.step(int(rng.integers(9)))
        assert observation.shape == (128,)
        assert observation.dtype == np.float32
        assert np.all(observation >= -1.0)
        assert np.all(observation <= 1.0)


@pytest.mark.parametrize(
    ("encoding", "size", "grows"),
    [
        ("memory", MEMORY_SIZE, "overworld_rooms_flag_7"),
        ("flags", FLAGS_SIZE, "overworld_rooms_event_4"),
    ],
)
def test_the_memory_observations_append_the_rooms_flags_to_the_frame(encoding, size, grows):
    plain, memory = ZeldaEnv(**WALKTHROUGH_ENV), ZeldaEnv(**WALKTHROUGH_ENV, observation=encoding)
    assert memory.observation_space.shape == (OBSERVATION_SIZE + size,)
    frame, info = plain.reset(seed=0)
    both, _ = memory.reset(seed=0)
    first_memory = both[OBSERVATION_SIZE:]
    policy = WalkthroughPolicy()
    policy.reset(plain, 0)
    # Out of the village and to the sword chest: room flags are set.
    for _ in range(load_walkthrough().mark_frame("sword_obtained")):
        action = policy.act(frame, info)
        frame, _, _, _, info = plain.step(action)
        both, *_ = memory.step(action)
        assert both.dtype == np.float32
        assert both.shape == memory.observation_space.shape
        np.testing.assert_array_equal(both[:OBSERVATION_SIZE], frame)
        np.testing.assert_array_equal(both, encoder(encoding)(memory.raw_state))
    slot = [slot.name for slot in {"memory": MEMORY_SLOTS, "flags": FLAG_SLOTS}[encoding]].index(
        grows
    )
    assert both[OBSERVATION_SIZE + slot] > first_memory[slot]
    plain.close()
    memory.close()


def step_until(env, action, condition, limit=400):
    for _ in range(limit):
        result = env.step(action)
        if condition(result):
            return result
    raise AssertionError("condition never met")


def test_coverage_counts_new_bins_only(env):
    env.reset(seed=0)
    # Standing still: no new cell.
    for _ in range(5):
        _, _, _, _, info = env.step(Action.NOOP)
        assert info["reward_components"]["coverage"] == 0.0
    # Walking right from the tile centre: a new 16-pixel bin after two steps of 4 px.
    coverage = [env.step(Action.RIGHT)[4]["reward_components"]["coverage"] for _ in range(8)]
    assert coverage == [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    # Walking back over the same cells: nothing.
    back = [env.step(Action.LEFT)[4]["reward_components"]["coverage"] for _ in range(8)]
    assert back == [0.0] * 8


def test_coverage_bin_size_is_configurable():
    env = ZeldaEnv(coverage_bin=32)
    env.reset(seed=0)
    cells = sum(env.step(Action.RIGHT)[4]["reward_components"]["coverage"] for _ in range(16))
    env.close()
    assert cells == 2  # 64 px walked across 32-px bins


def test_new_room_fires_on_entering_a_room_once(env):
    env.reset(seed=0)
    result = step_until(env, Action.UP, lambda r: r[4]["room_key"] == (0, 0, 0x11))
    assert result[4]["reward_components"]["new_room"] == 1.0
    assert result[1] > 0
    step_until(env, Action.DOWN, lambda r: r[4]["room_key"] == (0, 0, 0x21))
    back = step_until(env, Action.UP, lambda r: r[4]["room_key"] == (0, 0, 0x11))
    assert back[4]["reward_components"]["new_room"] == 0.0


@pytest.fixture(scope="module")
def walkthrough_episode():
    """The whole walkthrough through the env, one frame a step: components and RAM facts per step."""
    env = ZeldaEnv(WALKTHROUGH_ENV, max_episode_steps=10_000)
    policy = WalkthroughPolicy()
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    steps = []
    terminated = truncated = False
    while not (terminated or truncated):
        before = info["state"]
        observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
        steps.append((before, info["state"], info["reward_components"], reward))
    env.close()
    return steps, terminated


def test_walkthrough_through_the_env_wins(walkthrough_episode):
    steps, terminated = walkthrough_episode
    assert terminated
    assert steps[-1][1]["mode"] == "credits"
    assert steps[-1][2]["win"] == 1.0


@pytest.mark.parametrize(
    ("component", "fact"),
    [
        ("item", lambda b, a: len({a["inventory"]["b_slot"], a["inventory"]["a_slot"]} - {0}) > len({b["inventory"]["b_slot"], b["inventory"]["a_slot"]} - {0}) or a["max_hearts"] > b["max_hearts"]),
        ("key", lambda b, a: a["keys"] > b["keys"]),
        ("kill", lambda b, a: a["kills"] > b["kills"]),
        ("rupee", lambda b, a: a["rupees"] > b["rupees"]),
        ("damage", lambda b, a: a["health"] < b["health"]),
        ("win", lambda b, a: a["mode"] == "credits" and b["mode"] != "credits"),
        ("new_room", lambda b, a: a["room"] != b["room"] and b["mode"] == "world"),
    ],
)  # fmt: skip
def test_each_component_fires_exactly_on_its_event(walkthrough_episode, component, fact):
    steps, _ = walkthrough_episode
    fired = [i for i, (_, _, components, _) in enumerate(steps) if components[component]]
    events = [i for i, (before, after, _, _) in enumerate(steps) if fact(before, after)]
    assert fired
    if component == "new_room":
        assert set(fired) <= set(events)  # a revisited room is an event without a reward
    else:
        assert fired == events


def test_rupee_and_damage_components_count_units(walkthrough_episode):
    steps, _ = walkthrough_episode
    for before, after, components, _ in steps:
        if components["rupee"]:
            assert components["rupee"] == after["rupees"] - before["rupees"]
        if components["damage"]:
            assert components["damage"] == before["health"] - after["health"]


def test_death_component_fires_when_link_passes_out(env):
    env.reset(seed=0)
    env.gameboy.memory[RamAddress.HEALTH] = 4
    step_until(env, Action.UP, lambda r: r[4]["room_key"] == (0, 0, 0x11))
    deaths = 0
    for _ in range(3000):
        state = env._raw.to_dict(0)
        enemies = [e for e in state["entities"] if e["enemy"]]
        if not enemies:
            action = Action.NOOP
        else:
            target = min(
                enemies,
                key=lambda e: abs(e["x"] - state["link"]["x"]) + abs(e["y"] - state["link"]["y"]),
            )
            dx, dy = target["x"] - state["link"]["x"], target["y"] - state["link"]["y"]
            action = (
                (Action.RIGHT if dx > 0 else Action.LEFT)
                if abs(dx) > abs(dy)
                else (Action.DOWN if dy > 0 else Action.UP)
            )
        _, reward, _, _, info = env.step(action)
        if info["reward_components"]["death"]:
            deaths += 1
            assert reward < 0
            break
    assert deaths == 1


def test_sparse_mode_rewards_only_the_win():
    env = ZeldaEnv(reward_mode="sparse")
    env.reset(seed=0)
    result = step_until(env, Action.UP, lambda r: r[4]["room_key"] == (0, 0, 0x11))
    env.close()
    assert result[4]["reward_components"]["new_room"] == 1.0
    assert result[1] == 0.0


def test_sticky_actions_repeat_the_previous_action_with_probability_p():
    env = ZeldaEnv(sticky_action_probability=0.5)
    env.reset(seed=11)
    cycle = (Action.UP, Action.RIGHT, Action.DOWN, Action.LEFT)  # a repeat is rarely the choice
    chosen = [cycle[i % 4] for i in range(400)]
    applied = [env.step(action)[4]["action"] for action in chosen]
    env.close()
    repeated = sum(1 for i in range(1, 400) if applied[i] != chosen[i])
    assert 0.4 < repeated / 399 < 0.6
    assert all(a in (c, p) for a, c, p in zip(applied[1:], chosen[1:], applied, strict=False))


def test_no_sticky_actions_by_default(env):
    env.reset(seed=0)
    assert [env.step(a)[4]["action"] for a in (1, 2, 3, 4, 0)] == [1, 2, 3, 4, 0]


def test_latched_holds_keep_a_direction_for_k_steps():
    env = ZeldaEnv(latch_steps=3)
    env.reset(seed=0)
    chosen = [
        Action.RIGHT,
        Action.LEFT,
        Action.LEFT,
        Action.LEFT,
        Action.A,
        Action.B,
        Action.UP,
        Action.NOOP,
        Action.NOOP,
        Action.DOWN,
    ]
    applied = [env.step(action)[4]["action"] for action in chosen]
    env.close()
    assert applied == [Action.RIGHT, Action.RIGHT, Action.RIGHT, Action.LEFT, Action.LEFT, Action.LEFT, Action.UP, Action.UP, Action.UP, Action.DOWN]  # fmt: skip


def test_button_actions_press_again_when_repeated(env):
    """Choosing A twice opens the dialog and then advances it: each step is a fresh press."""
    env.reset(options={"start_state": "before_npc"})
    _, _, _, _, info = env.step(Action.A)
    assert info["state"]["dialog"]["open"]


def test_truncation_at_the_episode_length():
    env = ZeldaEnv(max_episode_steps=5)
    env.reset(seed=0)
    flags = [env.step(Action.NOOP)[3] for _ in range(5)]
    env.close()
    assert flags == [False, False, False, False, True]


def test_start_state_by_callable_and_by_options(env):
    calls = []

    def start(rng):
        calls.append(rng)
        return load_named_state("dungeon_entrance")

    env.reset(seed=0, options={"start_state": start})
    assert calls
    assert env._raw.room_key == (1, 0, 0x10)
    env.reset(options={"start_state": "before_puzzle"})
    assert env._raw.room_key == (0, 0, 0x01)


def test_render_returns_the_frame():
    env = ZeldaEnv(render_mode="rgb_array")
    env.reset(seed=0)
    env.step(Action.NOOP)
    frame = env.render()
    env.close()
    assert frame.shape == (144, 160, 3)


@pytest.mark.parametrize("action", [9, -1, 1.5, "a", None])
def test_invalid_action_names_the_action_space(env, action):
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Discrete\(9\)|not an integer"):
        env.step(action)


def test_step_before_reset_says_to_reset(env):
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(Action.NOOP)


def test_unknown_start_state_lists_the_names(env):
    with pytest.raises(UnknownStateError, match="start_of_play"):
        env.reset(options={"start_state": "castle"})


def test_rom_that_is_not_a_game_boy_rom(tmp_path: Path):
    path = tmp_path / "fake.gb"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match=r"fake\.gb.*too small"):
        ZeldaEnv(rom=str(path))


def test_state_from_another_rom_is_refused(env, tmp_path: Path):
    data = bytearray(bundled_cartridge().read_bytes())
    data[TITLE_START : TITLE_START + 5] = b"OTHER"
    data[0x14D] = header_checksum(bytes(data))
    other = tmp_path / "other.gb"
    other.write_bytes(bytes(data))
    with GameBoy(rom=other) as gameboy:
        foreign = gameboy.save_state()
    with pytest.raises(SaveStateRomMismatchError):
        env.reset(options={"start_state": foreign})


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("frame_skip", -4, "frame_skip=-4"),
        ("frame_skip", 0, "frame_skip=0"),
        ("frame_skip", 10_000, "frame_skip=10000"),
        ("sticky_action_probability", 1.5, "sticky_action_probability"),
        ("latch_steps", 0, "latch_steps"),
        ("reward_mode", "dense", "reward_mode"),
        ("coverage_bin", 0, "coverage_bin"),
        ("cartridge_seed", 300, "cartridge_seed"),
        ("observation", "pixels", "observation='pixels'"),
        ("no_such_setting", 1, "unknown env settings"),
    ],
)
def test_bad_settings_are_refused_naming_them(setting, value, message):
    with pytest.raises(EnvConfigError, match=message):
        ZeldaEnv(**{setting: value})


def test_info_state_validates_as_game_state(walkthrough_episode):
    steps, _ = walkthrough_episode
    for _, after, _, _ in steps[::97]:
        GameState.model_validate(after)


def test_cartridge_seed_changes_enemy_placement():
    def enemies(seed):
        env = ZeldaEnv(cartridge_seed=seed)
        env.reset(seed=0)
        result = step_until(env, Action.UP, lambda r: r[4]["room_key"] == (0, 0, 0x11))
        env.close()
        return hashlib.sha1(
            repr([e for e in result[4]["state"]["entities"] if e["enemy"]]).encode()
        ).hexdigest()

    assert enemies(0) != enemies(9)


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (
            "start_of_play",
            {"sword": False, "puzzle": False, "dungeon": False, "key": False, "lock": False},
        ),
        (
            "before_puzzle",
            {"sword": True, "puzzle": False, "dungeon": False, "key": False, "lock": False},
        ),
        ("last_room", {"sword": True, "puzzle": True, "dungeon": True, "key": True, "lock": True}),
    ],
)
def test_episode_end_reports_milestones(start, expected):
    env = ZeldaEnv(start_state=start, max_episode_steps=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert "milestones" not in info  # only when the episode ends
    _, _, _, truncated, info = env.step(0)
    assert truncated
    assert info["milestones"] == {**expected, "instrument": False}


@pytest.mark.parametrize(
    ("start", "level"),
    [("start_of_play", 0), ("before_puzzle", 1), ("dungeon_entrance", 2), ("last_room", 4)],
)
def test_progress_level_counts_the_route(start, level):
    """Sword 1, puzzle 1, a door opened 2 (its key spent): the level never falls on the route."""
    env = ZeldaEnv(start_state=start, info_state=False)
    env.reset(seed=0)
    assert progress_level(env.raw_state) == level
    env.gameboy.memory[RamAddress.DUNGEON_SMALL_KEYS] = 1
    assert progress_level(env._read()) == level + 1
