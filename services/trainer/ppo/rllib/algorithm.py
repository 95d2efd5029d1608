"""The algorithm a run trains: RLlib's ``PPOConfig`` chain with the trainer's extensions.

One chain, one section per step: the env, the env runners (with the lean sampling path),
the learner (lean, SIL, decoupled), the module, the callbacks and the seed. CPU only: no
GPU is requested anywhere.
"""

from __future__ import annotations

from typing import Any

from trainer.config import Deployment
from trainer.ppo.config import TrainConfig


def build_algorithm(config: TrainConfig, deployment: Deployment, archive_actor: str) -> Any:
    """The algorithm, built (call inside the run's Ray)."""
    return ppo_config(config, deployment, archive_actor).build_algo()


def ppo_config(config: TrainConfig, deployment: Deployment, archive_actor: str) -> Any:
    """PPO on the new API stack, its envs wrapped by the trainer and sharing the Go-Explore
    archive actor named `archive_actor`."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from koholint import ENV_ID
    from trainer.ppo.envs import rllib_env_config
    from trainer.ppo.rllib.callbacks import KoholintCallbacks
    from trainer.ppo.rllib.overlap import OverlappedPPO
    from trainer.ppo.rllib.sampling import LeanPPOModule

    return (
        PPOConfig(algo_class=OverlappedPPO if config.overlap_sampling else None)
        .environment(ENV_ID, env_config=rllib_env_config(config, deployment, archive_actor))
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.envs_per_env_runner,
            rollout_fragment_length=config.fragment_length(),
            num_cpus_per_env_runner=1,
            num_gpus_per_env_runner=0,
            # the env's registered vector env, each env wrapped by the trainer (envs.py)
            gym_env_vectorize_mode="vector_entry_point",
            **lean_sampling_settings(config.lean_sampling),
        )
        .learners(num_learners=0, num_gpus_per_learner=0)
        .training(
            train_batch_size_per_learner=config.train_batch_size,
            minibatch_size=config.minibatch_size,
            num_epochs=config.num_epochs,
            lr=config.learning_rate,
            gamma=config.gamma,
            entropy_coeff=config.entropy_coeff,
            **learner_settings(config),
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=LeanPPOModule if config.lean_sampling else None,
                model_config=DefaultModelConfig(
                    fcnet_hiddens=list(config.hidden_sizes),
                    fcnet_activation="tanh",
                    vf_share_layers=False,
                ),
            )
        )
        .callbacks(KoholintCallbacks)
        .debugging(seed=config.seed)
    )


def lean_sampling_settings(lean: bool) -> dict[str, Any]:
    """``env_runners`` settings of the lean sampling path (sampling.py, runner.py), or none."""
    from trainer.ppo.rllib import sampling
    from trainer.ppo.rllib.runner import LeanEnvRunner

    if not lean:
        return {}
    return {
        "env_runner_cls": LeanEnvRunner,
        "add_default_connectors_to_env_to_module_pipeline": False,
        "add_default_connectors_to_module_to_env_pipeline": False,
        "env_to_module_connector": sampling.env_to_module,
        "module_to_env_connector": sampling.module_to_env,
        # Both pipelines are stateless: nothing to gather from the runners after each
        # iteration (a blocking round trip that would also wait out an overlapped sample).
        "merge_env_runner_states": False,
        "broadcast_env_runner_states": False,
    }


def learner_settings(config: TrainConfig) -> dict[str, Any]:
    """``training`` settings of the learner: the lean one (learner.py), with SIL when on
    (sil.py), decoupled when sampling overlaps (overlap.py)."""
    from trainer.ppo.rllib.learner import LeanPPOTorchLearner
    from trainer.ppo.rllib.overlap import PROXIMAL_LEARNERS
    from trainer.ppo.rllib.sil import SilSettings, sil_training_settings

    settings = sil_training_settings(
        SilSettings(
            **config.sil.model_dump(),
            batch_size=config.minibatch_size,
            gamma=config.gamma,
            seed=config.seed,
            **demo_settings(config),
        )
    )
    settings.setdefault("learner_class", LeanPPOTorchLearner)
    if config.overlap_sampling:
        settings["learner_class"] = PROXIMAL_LEARNERS[settings["learner_class"]]
    return settings


def demo_settings(config: TrainConfig) -> dict[str, Any]:
    """SIL's demonstration: the curriculum's trajectory when robustifying with sil_demo."""
    if not config.sil.demo or config.phase not in ("robustify", "both"):
        return {}
    return {"demo_trajectory": config.curriculum.trajectory, "demo_env": config.env}
