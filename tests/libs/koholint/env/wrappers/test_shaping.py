"""Potential-based shaping: the optimal policy is unchanged, the shaped return telescopes, and
R_phi is applied to exactly the observations the export stores."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from koholint.env.export import ExportQueue, read_segment
from koholint.env.wrappers import ProgressLevel, SegmentRecorder, ShapingWrapper
from koholint.env.zelda import ZeldaEnv
from koholint.explore.trajectory import exploration_env
from koholint.reward.model import RewardModelPotential
from koholint.store import LocalStore

sys.path.insert(0, str(Path(__file__).parents[2] / "reward"))
from reward_versions import random_reward_model

GAMMA = 0.9
WIN = Path(__file__).parents[5] / "benchmarks/results/win/explore-seed0-short.actions"


class TablePotential:
    """Phi of a one-hot observation: a table lookup."""

    def __init__(self, values: np.ndarray, version: str = "table") -> None:
        self.values, self.version = values, version

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        return observations @ self.values  # type: ignore[no-any-return]


class TabularEnv(gym.Env[np.ndarray, np.int64]):
    """A deterministic tabular MDP: next_state[s, a], reward[s, a]; state `terminal` ends the
    episode; reset(options={'state': s}) starts anywhere."""

    def __init__(self, next_state: np.ndarray, reward: np.ndarray, terminal: int) -> None:
        self.next_state, self.reward, self.terminal = next_state, reward, terminal
        states, actions = next_state.shape
        self.observation_space = gym.spaces.Box(0.0, 1.0, (states,), np.float32)
        self.action_space = gym.spaces.Discrete(actions)
        self.state = 0

    def _observation(self) -> np.ndarray:
        return np.eye(self.next_state.shape[0], dtype=np.float32)[self.state]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.state = int((options or {}).get("state", 0))
        return self._observation(), {}

    def step(self, action: Any) -> Any:
        reward = float(self.reward[self.state, action])
        self.state = int(self.next_state[self.state, action])
        return self._observation(), reward, self.state == self.terminal, False, {}


def random_mdp(seed: int, states: int = 7, actions: int = 3) -> TabularEnv:
    rng = np.random.default_rng(seed)
    next_state = rng.integers(0, states, size=(states, actions))
    next_state[rng.integers(0, states - 1), 0] = states - 1  # the terminal state is reachable
    return TabularEnv(next_state, rng.normal(size=(states, actions)), terminal=states - 1)


def reward_table(env: gym.Env[np.ndarray, Any], mdp: TabularEnv) -> tuple[np.ndarray, np.ndarray]:
    """(reward, terminated) of every (state, action), measured by stepping `env`."""
    states, actions = mdp.next_state.shape
    rewards, ends = np.zeros((states, actions)), np.zeros((states, actions), bool)
    for state in range(states - 1):
        for action in range(actions):
            env.reset(options={"state": state})
            _, reward, terminated, _, _ = env.step(action)
            rewards[state, action], ends[state, action] = float(reward), terminated
    return rewards, ends


def optimal_q(mdp: TabularEnv, rewards: np.ndarray, ends: np.ndarray) -> np.ndarray:
    q = np.zeros_like(rewards)
    for _ in range(2000):
        value = q.max(axis=1)
        value[mdp.terminal] = 0.0
        q = rewards + GAMMA * np.where(ends, 0.0, value[mdp.next_state])
    return q


@pytest.mark.parametrize("seed", range(5))
def test_potential_shaping_leaves_the_optimal_policy_unchanged(seed: int):
    mdp = random_mdp(seed)
    potential = TablePotential(np.random.default_rng(100 + seed).normal(size=7) * 5)
    shaped_env = ShapingWrapper(mdp, gamma=GAMMA, scale=1.0, potential=potential)
    plain = optimal_q(mdp, *reward_table(mdp, mdp))
    shaped = optimal_q(mdp, *reward_table(shaped_env, mdp))
    live = [state for state in range(7) if state != mdp.terminal]
    np.testing.assert_array_equal(plain[live].argmax(axis=1), shaped[live].argmax(axis=1))
    # Q changes by exactly -Phi(s): the test would see any other change.
    np.testing.assert_allclose(shaped[live], plain[live] - potential.values[live, None])


def test_a_bonus_that_is_not_a_potential_difference_does_change_the_policy():
    """The check above can fail: paying Phi(s') outright (no -Phi(s)) flips the policy."""
    # Two actions from state 0: go to 1 (reward 1, then stuck) or to 2 (reward 0, then stuck).
    next_state = np.array([[1, 2], [3, 3], [3, 3], [3, 3]])
    reward = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    mdp = TabularEnv(next_state, reward, terminal=3)
    potential = np.array([0.0, 0.0, 3.0, 0.0])
    bonus = reward.copy()
    bonus[:, :] += potential[next_state]  # R + Phi(s'), not potential-based
    ends = next_state == 3
    assert optimal_q(mdp, reward, ends)[0].argmax() == 0
    assert optimal_q(mdp, bonus, ends)[0].argmax() == 1
    shaped = ShapingWrapper(mdp, gamma=GAMMA, potential=TablePotential(potential))
    assert optimal_q(mdp, *reward_table(shaped, mdp))[0].argmax() == 0


def test_shaping_is_zero_at_terminal_states():
    mdp = TabularEnv(np.array([[1], [1]]), np.zeros((2, 1)), terminal=1)
    env = ShapingWrapper(mdp, gamma=GAMMA, potential=TablePotential(np.array([2.0, 7.0])))
    env.reset(options={"state": 0})
    _, reward, terminated, _, info = env.step(0)
    assert terminated
    assert reward == pytest.approx(-2.0)  # gamma * 0 - Phi(s0): no Phi(s') at the end
    assert info["reward_components"]["shaping"] == pytest.approx(-2.0)


def test_shaped_return_differs_by_exactly_the_end_potentials_on_a_truncated_episode():
    model = random_reward_model()
    potential = RewardModelPotential(model)
    scale = 0.3
    env = ShapingWrapper(
        ZeldaEnv(max_episode_steps=40), gamma=GAMMA, scale=scale, potential=potential
    )
    observation, _ = env.reset(seed=1)
    phi_start = scale * float(potential(observation[None])[0])
    rng = np.random.default_rng(1)
    discounted_shaping, discount, truncated = 0.0, 1.0, False
    while not truncated:
        observation, _, terminated, truncated, info = env.step(int(rng.integers(9)))
        assert not terminated
        discounted_shaping += discount * info["reward_components"]["shaping"]
        discount *= GAMMA
    phi_end = scale * float(potential(observation[None])[0])
    assert phi_end != 0.0  # truncation keeps Phi: the value bootstraps there
    assert discounted_shaping == pytest.approx(discount * phi_end - phi_start, abs=1e-9)


def test_a_new_potential_waits_for_the_next_episode():
    mdp = TabularEnv(np.array([[0], [1]]), np.zeros((2, 1)), terminal=1)
    env = ShapingWrapper(mdp, gamma=1.0)
    env.reset(options={"state": 0})
    env.set_potential(TablePotential(np.array([1.0, 0.0]), version="v2"))
    _, reward, *_ = env.step(0)
    assert reward == 0.0  # off until the episode ends
    assert env.pending_version == "v2"
    env.reset(options={"state": 0})
    _, _, _, _, info = env.step(0)
    assert info["reward_model_version"] == "v2"
    assert env.shaped_steps == {"v2": 1}


def test_r_phi_is_applied_to_the_very_observations_the_export_stores(tmp_path: Path):
    """The reward model trains on the exported ``observation`` of each step; shaping applies
    it to the env's observation: they must be the same vectors."""
    model = random_reward_model(seed=3)
    store = LocalStore(tmp_path)
    exporter = ExportQueue(store)
    shaped = ShapingWrapper(
        ZeldaEnv(max_episode_steps=30), gamma=GAMMA, potential=RewardModelPotential(model)
    )
    env = SegmentRecorder(shaped, exporter, run="same", every=1, segment_steps=100, frames=False)
    observation, _ = env.reset(seed=0)
    phi = float(model.function.normalised(observation[None])[0])
    shaping = []
    for action in np.random.default_rng(0).integers(9, size=30):
        _, _, _, _, info = env.step(int(action))
        shaping.append(info["reward_components"]["shaping"])
    env.close()
    exporter.close()
    (key,) = [k for k in store.list("episodes/same/") if k.endswith("manifest.json")]
    segment = read_segment(store, key.rsplit("/", 1)[0])
    stored = np.array([step["observation"] for step in segment.steps], np.float32)
    potentials = np.concatenate([[phi], model.function.normalised(stored)])
    np.testing.assert_allclose(shaping, GAMMA * potentials[1:] - potentials[:-1], atol=1e-6)
    assert [step["reward_components"]["shaping"] for step in segment.steps] == shaping
    assert segment.manifest["encoder_version"] == model.card.encoder_version


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="gamma"):
        ShapingWrapper(ZeldaEnv(), gamma=0.0)
    with pytest.raises(ValueError, match="scale"):
        ShapingWrapper(ZeldaEnv(), gamma=0.9, scale=float("nan"))


def test_the_hand_written_potential_pays_each_progress_level_of_a_won_game():
    """Phi = scale * the progress level read from RAM: replaying a win, every step's F is
    scale * the level's rise (gamma 1), read against the env's own structured state."""
    actions = WIN.read_bytes()
    game = exploration_env(start_state="start_of_play", frame_skip=4, planner=True,
                           max_episode_steps=len(actions) + 1)  # fmt: skip
    env = ShapingWrapper(game, gamma=1.0, scale=0.5, potential=ProgressLevel(game))
    env.reset(seed=0)
    level = game.unwrapped.structured_state()["progress"]
    rises = []
    for action in actions:
        _, _, terminated, _, info = env.step(action)
        if terminated:  # the win: Phi is 0 at the terminal state
            assert info["reward_components"]["shaping"] == pytest.approx(-0.5 * level)
            break
        now = game.unwrapped.structured_state()["progress"]
        assert info["reward_components"]["shaping"] == pytest.approx(0.5 * (now - level))
        rises.append(now - level)
        level = now
    assert terminated
    assert sum(rises) >= 4
    assert env.shaped_steps == {"progress-level": len(rises) + 1}
    env.close()


def test_the_hand_written_potential_needs_the_game():
    with pytest.raises(TypeError, match="koholint/Zelda-v1"):
        ProgressLevel(TabularEnv(np.zeros((2, 1), np.int64), np.zeros((2, 1)), 1))
