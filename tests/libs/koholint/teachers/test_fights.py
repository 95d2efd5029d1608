"""The scripted fighter whose clean fights (and walks to the key they uncover) join the
demonstration in the warm start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from koholint.env.encoding import OBSERVATION_SIZE, SLOT_INDEX
from koholint.env.zelda import EnvConfig
from koholint.explore.demo import DemoTransitions, demo_transitions
from koholint.schemas.env import Action
from koholint.teachers.fights import (
    corrected_fights,
    fight_action,
    fight_steps,
    fight_transitions,
)

RESULTS = Path(__file__).parents[4] / "benchmarks" / "results"
WIN = RESULTS / "win" / "explore-seed0-short.actions"
MEDIUM_2_WIN = RESULTS / "worlds" / "stall-2026-11-29" / "medium-2-s0-frontier-win.actions"
"""Phase 1's win on generated world medium 2: its key halls have blocks inside."""


def observation(dx: float | None, dy: float = 0.0, facing: str = "right", sword_in_b: bool = True):
    """An observation with the nearest enemy `dx`, `dy` pixels away (None: no enemy)."""
    obs = np.zeros(OBSERVATION_SIZE, np.float32)
    obs[SLOT_INDEX[f"facing_{facing}"]] = 1.0
    obs[SLOT_INDEX["sword_in_b"]] = float(sword_in_b)
    obs[SLOT_INDEX["sword_in_a"]] = float(not sword_in_b)
    if dx is not None:
        obs[SLOT_INDEX["enemy_nearby"]] = 1.0
        obs[SLOT_INDEX["nearest_enemy_dx"]] = dx / 160
        obs[SLOT_INDEX["nearest_enemy_dy"]] = dy / 128
    return obs


@pytest.mark.parametrize(
    ("obs", "action"),
    [
        (observation(16, 4), Action.B),  # in reach, in front: swing
        (observation(16, 4, sword_in_b=False), Action.A),  # the sword on A
        (observation(-16, 0, facing="left"), Action.B),
        (observation(3, 18, facing="down"), Action.B),
        (observation(-16, 0), Action.LEFT),  # behind: turn toward it
        (observation(40, 2), Action.RIGHT),  # out of reach: close the larger gap
        (observation(10, -30), Action.UP),
        (observation(16, 20), Action.DOWN),  # beside the sword's box, not in it
    ],
)
def test_the_fighter_swings_at_what_is_in_reach_and_closes_on_what_is_not(obs, action):
    assert fight_action(obs) == action


def test_no_enemy_left_ends_the_fight():
    assert fight_action(observation(None)) is None


def test_fight_steps_run_from_entering_a_room_to_its_last_kill_while_an_enemy_is_left():
    rooms = [1] * 10 + [2] * 20 + [3] * 10  # the kills are in room 2 at steps 20 and 26
    kills = [0] * 20 + [1] * 6 + [2] * 14
    obs = np.zeros((40, OBSERVATION_SIZE), np.float32)
    obs[:, SLOT_INDEX["room_id"]] = np.array(rooms) / 255
    obs[:, SLOT_INDEX["kills"]] = np.array(kills) / 255
    obs[:26, SLOT_INDEX["enemy_nearby"]] = 1.0
    obs[12, SLOT_INDEX["enemy_nearby"]] = 0.0  # an enemy out of the tables for a step
    demo = DemoTransitions(obs, np.zeros(40, np.int64), np.zeros(40, np.float32))
    assert fight_steps(demo, every=2) == [10, 14, 16, 18, 20, 22, 24]


SWINGS = {int(Action.A), int(Action.B)}
MOVES = {int(Action.UP), int(Action.DOWN), int(Action.LEFT), int(Action.RIGHT)}


def assert_the_fighters_steps(observations: np.ndarray, actions: np.ndarray) -> None:
    """Each step is the fighter's on its observation: a swing exactly where an enemy is in
    reach, else a d-pad step (straight at the enemy, or the path-finder's around a block)."""
    for observation, action in zip(observations, actions.tolist(), strict=True):
        straight = fight_action(observation)
        assert action == straight if straight in SWINGS else action in MOVES


def test_the_fighter_clears_the_key_hall_from_the_demonstrations_states():
    """Real PyBoy on a committed win: every fight state yields clean fights, and their
    steps are the fighter's actions on the observations it saw, all with an enemy left."""
    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    report = fight_transitions(actions, demo, config, episodes=2)
    assert report.starts >= 4
    assert report.episodes == 2 * report.starts
    assert report.clean >= 0.9 * report.episodes  # 36 of 36 when written
    fought = report.transitions
    assert fought.observations.shape == (len(fought.actions), OBSERVATION_SIZE)
    fighting = fought.observations[:, SLOT_INDEX["enemy_nearby"]] > 0.5
    assert_the_fighters_steps(fought.observations[fighting], fought.actions[fighting])
    # once the hall is clear, the walk to the key it shows: steps without an enemy, and
    # every fight took one key (it lies in the room until the walk ends)
    assert 0 < np.count_nonzero(~fighting) < len(fighting) / 2
    keys = np.rint(fought.observations[:, SLOT_INDEX["keys"]] * 9)
    assert (keys == keys[0]).all()  # the key is taken at the last step, never before


def test_a_fight_needs_at_least_one_episode():
    demo = DemoTransitions(np.zeros((1, OBSERVATION_SIZE), np.float32), np.zeros(1, np.int64),
                           np.zeros(1, np.float32))  # fmt: skip
    with pytest.raises(ValueError, match="episodes 0"):
        fight_transitions(b"\x00", demo, EnvConfig(), episodes=0)


def test_after_the_fight_the_fighter_walks_to_the_key_and_takes_it():
    from koholint.env.zelda import ZeldaEnv
    from koholint.teachers.base import healed_states
    from koholint.teachers.fights import fight_steps, loot_action

    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25})
    demo = demo_transitions(actions, config)
    start = healed_states(actions, config, fight_steps(demo, 8), 8)[0]
    env = ZeldaEnv(config.replaced(start_state=start.state, max_episode_steps=300))
    observation, _ = env.reset(seed=3)
    keys_before = env.raw_state.keys
    took = False
    for _ in range(300):
        action = fight_action(observation)
        action = loot_action(env) if action is None else action
        observation, _, _, _, info = env.step(Action.NOOP if action is None else action)
        if info["reward_components"]["key"]:
            took = True
            break
    keys_after = env.raw_state.keys
    env.close()
    assert took
    assert keys_after == keys_before + 1


def test_a_clone_that_stands_still_in_the_key_hall_is_labelled_with_the_fighters_steps():
    """Real PyBoy, DAgger's labels on a committed win: a policy that never moves fights from
    every fight state under sticky actions; no fight of its is clean, and every state it
    stood in with an enemy left is labelled with the fighter's step there (closing in, or
    swinging at what comes within reach)."""
    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    played: list[int] = []

    def stand_still(observation: np.ndarray, rng: np.random.Generator) -> int:
        played.append(int(Action.NOOP))
        return int(Action.NOOP)

    report = corrected_fights(actions, demo, config, stand_still, episodes=2)
    assert report.starts == len(fight_steps(demo, 8)) >= 4
    assert report.episodes == 2 * report.starts
    assert report.clean == 0  # standing still clears no hall
    labelled = report.transitions
    assert labelled.observations.shape == (len(labelled.actions), OBSERVATION_SIZE)
    assert len(played) >= len(labelled.actions) >= report.episodes
    fighting = labelled.observations[:, SLOT_INDEX["enemy_nearby"]] > 0.5
    assert fighting.all()  # no enemy was ever beaten, so no walk to a key was labelled
    assert_the_fighters_steps(labelled.observations, labelled.actions)
    assert SWINGS & set(labelled.actions.tolist())  # enemies came within reach
    assert MOVES & set(labelled.actions.tolist())  # and elsewhere the fighter closes in


def test_a_clone_that_fights_as_the_fighter_does_is_counted_clean(monkeypatch):
    """Real PyBoy: the fighter's own steps played as the policy (after the fight, the step
    toward the key the labeller just gave): its fights clear the hall and take the key."""
    import koholint.teachers.fights as fights

    actions = WIN.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    to_key = [int(Action.NOOP)]
    loot = fights.loot_action

    def loot_remembered(env):
        step = loot(env)
        to_key[0] = int(Action.NOOP) if step is None else step
        return step

    def as_the_fighter(observation: np.ndarray, rng: np.random.Generator) -> int:
        action = fight_action(observation)
        return to_key[0] if action is None else action

    monkeypatch.setattr(fights, "loot_action", loot_remembered)
    report = corrected_fights(actions, demo, config, as_the_fighter, episodes=1)
    assert report.clean >= 0.8 * report.episodes > 0
    assert len(report.transitions.actions) > report.episodes


def test_corrected_fights_need_at_least_one_episode():
    demo = DemoTransitions(np.zeros((1, OBSERVATION_SIZE), np.float32), np.zeros(1, np.int64),
                           np.zeros(1, np.float32))  # fmt: skip
    with pytest.raises(ValueError, match="corrected fights"):
        corrected_fights(b"\x00", demo, EnvConfig(), lambda observation, rng: 0, episodes=0)


@pytest.fixture(scope="module")
def medium_2(tmp_path_factory):
    """Generated world medium 2 as the default world, its win's demonstration, and the
    fight starts in the room whose blocks stood between Link and the enemy."""
    from koholint.game.rom import bundled_cartridge, playing
    from koholint.game.worldgen import generate, write_world
    from koholint.teachers.base import healed_states, rooms

    folder = tmp_path_factory.mktemp("worlds") / "medium-2"
    write_world(generate(2, "medium"), bundled_cartridge().read_bytes(), folder)
    with playing(folder):
        actions = MEDIUM_2_WIN.read_bytes()
        config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
        demo = demo_transitions(actions, config)
        where = rooms(demo.observations)
        steps = [step for step in fight_steps(demo, 8) if where[step] == (1, 0, 34)]
        yield config, healed_states(actions, config, steps[::4], 8)


def test_the_fighter_walks_around_the_blocks_of_a_generated_key_hall(medium_2):
    """Real PyBoy on medium 2: walking straight at the enemy, the fighter pressed into a
    block until its fights timed out; along the path-finder's steps it clears the hall."""
    from koholint.teachers.fights import fight_episode

    config, starts = medium_2
    assert len(starts) >= 3
    clean = sum(fight_episode(start.state, config, seed) is not None
                for start in starts for seed in range(2))  # fmt: skip
    assert clean >= 0.9 * 2 * len(starts)


def test_walking_straight_at_the_enemy_is_blocked_in_that_hall(medium_2):
    """The same starts with the path-finder taken away: the straight walk times out."""
    from koholint.teachers.fights import fight_episode

    config, starts = medium_2
    straight = lambda env, observation: fight_action(observation)  # noqa: E731
    clean = sum(fight_episode(start.state, config, seed, straight) is not None
                for start in starts for seed in range(2))  # fmt: skip
    assert clean <= 0.5 * 2 * len(starts)
