"""Behaviour cloning of the demonstration before PPO, and the recipe from a late start."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import pytest
import torch
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from koholint.env.zelda import EnvConfig
from koholint.explore.demo import demo_transitions
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.rllib.sampling import LeanPPOModule
from trainer.ppo.rllib.warm_start import MODULE_ID, _clone, correct_round
from trainer.ppo.run import TrainingRun

WIN = Path(__file__).parents[5] / "benchmarks" / "results" / "win"
TRAJECTORY = WIN / "explore-seed0-short.actions"


def stand_in_teacher(name: str, observations, label: int, *, starts: int, episodes: int,
                     clean: int, played: list[int] | None = None):  # fmt: skip
    """A labeller's part in a DAgger round: it labels `observations` with `label` (and
    records what the policy would have played on them)."""
    import numpy as np

    from koholint.explore.demo import DemoTransitions
    from koholint.teachers.base import TaughtReport

    def teacher(act):
        if played is not None:
            rng = np.random.default_rng(0)
            played.extend(act(observation, rng) for observation in observations)
        labels = np.full(len(observations), label, np.int64)
        transitions = DemoTransitions(observations, labels,
                                      np.zeros(len(observations), np.float32))  # fmt: skip
        return {name: TaughtReport(transitions, starts=starts, episodes=episodes, clean=clean)}

    return teacher


def policy_module() -> LeanPPOModule:
    spec = RLModuleSpec(
        module_class=LeanPPOModule,
        observation_space=gym.spaces.Box(-1.0, 1.0, (128,)),
        action_space=gym.spaces.Discrete(9),
        model_config=DefaultModelConfig(fcnet_hiddens=[64, 64], fcnet_activation="tanh"),
    )
    module: LeanPPOModule = spec.build()
    return module


def test_cloning_fits_the_policy_to_the_demonstration_and_leaves_the_value_alone():
    demo = demo_transitions(TRAJECTORY.read_bytes(), EnvConfig.parse({}))
    torch.manual_seed(0)  # the module's initial weights
    module = policy_module()
    values_before = {name: p.detach().clone() for name, p in module.named_parameters()
                     if name.startswith(("encoder.critic_encoder.", "vf."))}  # fmt: skip
    learner = SimpleNamespace(module={MODULE_ID: module})
    report = _clone(learner, observations=demo.observations, actions=demo.actions, epochs=300,
                    seed=0)  # fmt: skip
    # an untrained policy favours some action (0.05-0.35 of the demo's); 300 passes: ~0.7
    assert report["accuracy_after"] > 0.6
    assert report["accuracy_after"] > report["accuracy_before"] + 0.3
    for name, parameter in module.named_parameters():
        if name in values_before:
            assert parameter.detach().equal(values_before[name]), name


def test_label_smoothing_keeps_every_action_possible_where_plain_cloning_makes_one_certain():
    """Thousands of steps over consistent labels drive plain cross-entropy to probability
    1.000 (a state the labels missed is then pressed into a wall for good); smoothed targets
    keep a floor under every other action, the label still first."""
    import numpy as np

    demo = demo_transitions(TRAJECTORY.read_bytes(), EnvConfig.parse({}))
    observations = demo.observations[:256]
    labels = np.full(len(observations), 4, np.int64)  # RIGHT everywhere
    others: dict[float, float] = {}
    for smoothing in (0.0, 0.1):
        torch.manual_seed(0)
        module = policy_module()
        learner = SimpleNamespace(module={MODULE_ID: module})
        report = _clone(learner, observations=observations, actions=labels, epochs=2000, seed=0,
                        smoothing=smoothing)  # fmt: skip
        assert report["accuracy_after"] == 1.0
        with torch.no_grad():
            logits = module.forward_train({"obs": torch.from_numpy(observations)})
        probabilities = torch.softmax(logits["action_dist_inputs"], dim=-1)
        others[smoothing] = float(probabilities[:, [0, 1, 2, 3, 5, 6, 7, 8]].min())
    assert others[0.0] < 1e-3  # every other action all but impossible
    assert others[0.1] > 0.005  # the smoothed optimum leaves 0.1 / 9 to each


def test_a_correction_round_labels_the_clones_own_states_and_the_cloning_goes_on():
    """DAgger's round on a learner: the teacher gets the cloned policy (sampling valid
    actions), its labels join the data, and the policy then follows them too."""

    demo = demo_transitions(TRAJECTORY.read_bytes(), EnvConfig.parse({}))
    strayed = 1.0 - demo.observations[:64]  # states the demonstration never showed
    played: list[int] = []
    # the walker's part, as a stand-in: always RIGHT
    teacher = stand_in_teacher("walks", strayed, 4, starts=8, episodes=16, clean=5, played=played)

    torch.manual_seed(0)
    module = policy_module()
    learner = SimpleNamespace(module={MODULE_ID: module})
    report = _clone(learner, observations=demo.observations, actions=demo.actions, epochs=100,
                    seed=0, correct=teacher, rounds=1)  # fmt: skip
    assert len(played) == len(strayed)
    assert set(played) <= set(range(9))
    [round_] = report["corrections"]
    assert round_["walks"] == {"episodes": 16, "clean": 5, "labels": 64}
    assert round_["agreed"] < 0.9  # the clone did not already step right there
    with torch.no_grad():
        chosen = module.forward_train({"obs": torch.from_numpy(strayed)})["action_dist_inputs"]
    assert (chosen.argmax(dim=-1) == 4).float().mean() > 0.9
    assert report["accuracy_corrected"] > 0.6


def test_a_round_during_ppo_labels_the_policy_as_it_is_and_keeps_what_was_fitted():
    """DAgger's round during PPO, on a learner the warm start left its data on: the labels
    of the policy's own states join everything fitted before, the passes shrink as the data
    grows (the same minibatch steps a round), and the policy then follows the new labels
    while still following the demonstration."""
    demo = demo_transitions(TRAJECTORY.read_bytes(), EnvConfig.parse({}))
    strayed = 1.0 - demo.observations[:256]  # states the demonstration never showed
    # the fighter's part, as a stand-in: always B
    teacher = stand_in_teacher("fights", strayed, 6, starts=4, episodes=8, clean=3)

    torch.manual_seed(0)
    module = policy_module()
    learner = SimpleNamespace(module={MODULE_ID: module})
    cloned = _clone(learner, observations=demo.observations, actions=demo.actions, epochs=100,
                    seed=0)  # fmt: skip
    done = correct_round(learner, correct=teacher, epochs=100, seed=1)
    assert done["fights"] == {"episodes": 8, "clean": 3, "labels": 256}
    assert done["agreed"] < 0.5  # the clone did not already swing there
    assert done["labels_in_all"] == len(demo.actions) + 256
    assert done["epochs"] == round(100 * len(demo.actions) / (len(demo.actions) + 256))
    with torch.no_grad():
        logits = module.forward_train({"obs": torch.from_numpy(strayed)})["action_dist_inputs"]
        demo_logits = module.forward_train({"obs": torch.from_numpy(demo.observations)})[
            "action_dist_inputs"]  # fmt: skip
    assert (logits.argmax(dim=-1) == 6).float().mean() > 0.9
    demo_actions = torch.from_numpy(demo.actions)
    kept = (demo_logits.argmax(dim=-1) == demo_actions).float().mean()
    assert kept > cloned["accuracy_after"] - 0.05  # what the warm start fitted is kept
    second = correct_round(learner, correct=teacher, epochs=100, seed=2)
    assert second["labels_in_all"] == len(demo.actions) + 512  # the labels accumulate


def test_a_round_on_a_resumed_learner_starts_from_its_own_labels():
    import numpy as np

    observations = np.random.default_rng(0).random((64, 128), np.float32)
    teacher = stand_in_teacher("walks", observations, 2, starts=1, episodes=1, clean=1)
    learner = SimpleNamespace(module={MODULE_ID: policy_module()})
    done = correct_round(learner, correct=teacher, epochs=5, seed=0)
    assert (done["labels_in_all"], done["epochs"]) == (64, 5)


@pytest.mark.slow
def test_the_recipe_from_a_late_start_clones_moves_the_start_and_evaluates_from_power_on(
    tmp_path: Path,
):
    """A short robustify run on the last steps of a committed win: the policy is cloned from
    the demonstration first, the start moves, and the policy is played from power-on; with
    both teachers labelling, and DAgger's rounds going on during PPO."""
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    settings = {
        "run": "recipe", "phase": "robustify", "planner": "rules", "total_env_steps": 1024,
        "curriculum": {"trajectory": str(TRAJECTORY)},
        "imitation": {"clone_epochs": 20, "labellers": ["fights", "walks"],
                      "correct_every_env_steps": 512, "route_episodes": 2},
        "num_env_runners": 0, "envs_per_env_runner": 1, "train_batch_size": 256,
        "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128,
        "export_every_episodes": 0, "curiosity_weight": 0.0, "checkpoint_every_iterations": 4,
        "evaluation": {"every_env_steps": 512, "episodes": 2, "processes": 1},
    }  # fmt: skip
    status = TrainingRun(TrainConfig.load(settings, {}), deployment).run()
    assert status.state == "finished"
    cloned = json.loads((tmp_path / "runs/recipe/warm_start.json").read_text())
    assert cloned["demo_steps"] == len(TRAJECTORY.read_bytes())
    assert cloned["accuracy_after"] > cloned["accuracy_before"]
    # the recipe clones the scripted fighter's clean fights in the key hall with it
    assert cloned["fights_clean"] >= 0.9 * cloned["fights_episodes"] > 0
    assert cloned["fights_steps"] > 0
    # and the path-finder's clean walks to each room's exit
    assert cloned["walks_clean"] >= 0.9 * cloned["walks_episodes"] > 0
    assert cloned["walks_steps"] > cloned["walks_clean"]
    # and one round of DAgger: the clone's own walks and fights from the same states, labelled
    [corrected] = cloned["corrections"]
    assert set(corrected) == {"fights", "walks", "agreed"}
    for name in ("fights", "walks"):
        assert corrected[name]["episodes"] == cloned[f"{name}_episodes"]
        assert 0 <= corrected[name]["clean"] <= corrected[name]["episodes"]
        assert corrected[name]["labels"] >= corrected[name]["episodes"]
    # and rounds during PPO, after the iterations past 512 and 1,024 env steps, counted
    rounds = [json.loads(line) for line in
              (tmp_path / "runs/recipe/dagger.jsonl").read_text().splitlines()]  # fmt: skip
    assert [r["at_env_steps"] >= 512 * (i + 1) for i, r in enumerate(rounds)] == [True, True]
    assert rounds[1]["labels_in_all"] > rounds[0]["labels_in_all"]
    # each with the policy's episodes from the curriculum's start then, the walker labelling
    for done in rounds:
        assert done["route"]["episodes"] in (0, 2)  # none where only the win is ahead
        assert 0 <= done["route"]["clean"] <= done["route"]["episodes"]
    assert status.other_work["teachers"] == cloned["env_steps"] + sum(
        r["env_steps"] for r in rounds)  # fmt: skip
    assert status.curriculum["moves"] >= 1  # random play wins there about half the time
    assert status.curriculum["start_step"] < 728  # the last demo state of the 730-step win
    assert [e.start for e in status.evaluations] == ["power_on", "power_on"]
    assert [e.env_steps for e in status.evaluations] == [512, 1024]
