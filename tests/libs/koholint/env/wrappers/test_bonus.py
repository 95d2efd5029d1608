"""The reward model as an intrinsic bonus (Motif/ONI): standardised R_phi, paid only above the
data set's median, divided by the cube of the event's count in the episode, counts reset at
each episode."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from koholint.env.encoding import SLOT_INDEX
from koholint.env.wrappers import BonusWrapper
from koholint.env.wrappers.shaping import bonus_rewards, event_key
from koholint.env.zelda import ZeldaEnv
from koholint.reward.model import RewardModelPotential, standardised_median

sys.path.insert(0, str(Path(__file__).parents[2] / "reward"))
from reward_versions import random_reward_model


class FixedValue:
    """A standardised R_phi that reads slot 0 of the observation."""

    def __init__(self, threshold: float = 0.0, version: str = "fixed") -> None:
        self.threshold, self.version = threshold, version

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        return observations[:, 0].astype(np.float64)


class Constant(FixedValue):
    def __init__(self, value: float) -> None:
        super().__init__(threshold=0.0, version="constant")
        self.value = value

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        return np.full(len(observations), self.value)


class RoomWalk(gym.Env[np.ndarray, int]):
    """Each step goes to the room the action names; slot 0 of the observation is the room's
    value, so R_phi (FixedValue) depends on the room only; no extrinsic reward."""

    values = {0: 0.5, 1: 2.0, 2: 3.0, 3: -1.0}

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (128,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.room = 0

    def _observation(self) -> np.ndarray:
        observation = np.zeros(128, np.float32)
        observation[0] = self.values[self.room]
        return observation

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.room = 0
        return self._observation(), {"room_key": (0, 0, 0)}

    def step(self, action: int) -> Any:
        self.room = int(action)
        return self._observation(), 0.0, False, False, {"room_key": (0, 0, self.room)}


def test_the_bonus_is_the_coefficient_times_r_above_the_threshold_over_the_count_cubed():
    values = np.array([2.0, 2.0, 2.0, 0.4, 0.6, -0.5, np.nan, np.inf])
    counts = np.array([1, 2, 3, 1, 1, 1, 1, 1])
    paid = bonus_rewards(values, threshold=0.5, counts=counts, coefficient=0.3)
    np.testing.assert_allclose(paid, [0.6, 0.6 / 8, 0.6 / 27, 0.0, 0.18, 0.0, 0.0, 0.0])


def test_a_median_below_the_mean_never_turns_the_bonus_into_a_penalty():
    paid = bonus_rewards(np.array([-0.2, 0.0, 0.1]), threshold=-0.5, counts=np.ones(3),
                         coefficient=1.0)  # fmt: skip
    np.testing.assert_allclose(paid, [0.0, 0.0, 0.1])


def test_r_is_standardised_by_the_cards_statistics_and_the_threshold_is_its_median():
    model = random_reward_model(seed=2)  # card: mean 0.5, std 2.0
    observations = np.random.default_rng(0).normal(size=(5, 128)).astype(np.float32)
    potential = RewardModelPotential(model)
    np.testing.assert_allclose(potential(observations), (model.function(observations) - 0.5) / 2.0,
                               rtol=1e-5)  # fmt: skip
    assert potential.threshold == 0.0  # no median recorded: the mean stands in
    with_median = model.card.model_copy(update={"output_median": 1.5})
    assert standardised_median(with_median) == pytest.approx(0.5)


def test_repeated_events_pay_an_eighth_then_a_27th_and_the_counts_restart_each_episode():
    env = BonusWrapper(RoomWalk(), coefficient=0.5, potential=FixedValue(threshold=1.0))
    env.reset()
    rewards = [float(env.step(action)[1]) for action in (1, 1, 2, 1, 0, 3)]
    # room 1: r = 2 (1st, 2nd, 3rd arrival); room 2: r = 3; room 0: 0.5 <= threshold; room 3 < 0
    assert rewards == pytest.approx([1.0, 1.0 / 8, 1.5, 1.0 / 27, 0.0, 0.0])
    env.reset()
    assert float(env.step(1)[1]) == pytest.approx(1.0)  # a new episode: counted anew
    assert env.shaped_steps == {"fixed": 7}
    assert env.shaping_sum == pytest.approx(1.0 + 1 / 8 + 1.5 + 1 / 27 + 1.0)


def test_the_start_state_counts_as_seen_and_a_new_model_waits_for_the_next_episode():
    env = BonusWrapper(RoomWalk(), coefficient=1.0)
    env.reset()
    _, reward, *_, info = env.step(1)
    assert reward == 0.0  # no model: unchanged
    assert "reward_components" not in info
    env.set_potential(FixedValue(threshold=-10.0, version="v2"))
    assert env.step(2)[1] == 0.0  # staged, not used mid-episode
    env.reset()
    *_, info = env.step(0)  # back in the start room: its second sighting
    assert info["reward_components"]["bonus"] == pytest.approx(0.5 / 8)
    assert info["reward_model_version"] == "v2"


def test_the_event_is_the_room_plus_what_link_holds():
    observation = np.zeros(128, np.float32)
    room = {"room_key": (1, 0, 5)}
    plain = event_key(observation, room)
    observation[SLOT_INDEX["has_sword"]] = 1.0
    with_sword = event_key(observation, room)
    assert with_sword != plain
    assert event_key(observation, {"room_key": (1, 0, 6)}) != with_sword
    observation[SLOT_INDEX["link_x"]] = 0.7  # where in the room does not matter
    assert event_key(observation, room) == with_sword


def test_on_the_real_env_the_bonus_decays_while_link_stays_in_his_room():
    env = BonusWrapper(ZeldaEnv(max_episode_steps=64, info_state=False), coefficient=0.2)
    env.set_potential(Constant(1.5))
    env.reset(seed=0)
    bonuses = []
    for _ in range(6):
        _, _, _, _, info = env.step(0)  # noop: same room, same items
        bonuses.append(info["reward_components"]["bonus"])
    # the start state was the first sighting: these are the 2nd to the 7th
    np.testing.assert_allclose(bonuses, [0.3 / count**3 for count in range(2, 8)], rtol=1e-6)
    env.close()


def test_a_negative_coefficient_is_refused():
    with pytest.raises(ValueError, match="coefficient"):
        BonusWrapper(RoomWalk(), coefficient=-0.1)
