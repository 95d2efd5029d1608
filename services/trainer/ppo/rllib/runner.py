"""The lean sampling path's env runner: RLlib's SingleAgentEnvRunner without per-step overhead.

Every step, RLlib's runner calls both connector pipelines (each call timed, and each
connector in it, by metric timers), times the module's forward pass, splits the batched
observations and actions into per-env lists (``unbatch``, through ``tree``), sums the
lengths of all episodes going into and out of the env-to-module pipeline, and calls
``on_episode_step`` for every env, listened to or not. Its own loop below skips that
bookkeeping (the saving per env step is measured in BENCHMARKS.md).

``LeanEnvRunner`` keeps RLlib's episodes, callbacks, failure handling and per-iteration
metrics, and, when the sampling path is the trainer's lean one (``LeanPPOModule``,
``LatestObservationsToTensor``, ``SampleCategoricalActions``), steps a loop of its own:
the observations the vector env returned go straight to the module (they are what
``LatestObservationsToTensor`` would stack), and the action sampler is called without its
pipeline. The episodes it returns are the ones RLlib's runner returns, step for step
(tested). Any other configuration samples through RLlib's loop, with the pipelines called
without a metrics logger.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from ray.rllib.connectors.module_to_env.module_to_env_pipeline import ModuleToEnvPipeline
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_runner import ENV_STEP_FAILURE
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

from trainer.ppo.rllib.sampling import (
    LatestObservationsToTensor,
    LeanPPOModule,
    SampleCategoricalActions,
)


class UnmeteredEnvToModulePipeline(EnvToModulePipeline):
    """RLlib's env-to-module pipeline, called without a metrics logger."""

    def __call__(self, **kwargs: Any) -> Any:
        kwargs["metrics"] = None
        return super().__call__(**kwargs)


class UnmeteredModuleToEnvPipeline(ModuleToEnvPipeline):
    """RLlib's module-to-env pipeline, called without a metrics logger."""

    def __call__(self, **kwargs: Any) -> Any:
        kwargs["metrics"] = None
        return super().__call__(**kwargs)


UNMETERED: dict[type, type] = {EnvToModulePipeline: UnmeteredEnvToModulePipeline,
                               ModuleToEnvPipeline: UnmeteredModuleToEnvPipeline}  # fmt: skip


class LeanEnvRunner(SingleAgentEnvRunner):
    """SingleAgentEnvRunner with a lean sampling loop for the trainer's lean path; its
    pipelines skip their per-step metrics, and ``on_episode_step`` callbacks are made only
    when one is implemented."""

    # RLlib's: the module's next input, and the episodes being sampled
    _cached_to_module: dict[str, Any] | None
    _ongoing_episodes: list[Any]

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        # The pipelines RLlib built, as their unmetered subclasses (same state, same pieces);
        # a class RLlib did not build is left alone.
        for pipeline in (self._env_to_module, self._module_to_env):
            if type(pipeline) in UNMETERED:
                pipeline.__class__ = UNMETERED[type(pipeline)]
        self._step_listened = config.callbacks_on_episode_step is not None or any(
            type(callback).on_episode_step is not RLlibCallback.on_episode_step
            for callback in self._callbacks
        )

    def _make_on_episode_callback(self, which: str, idx: int, episodes: Any) -> None:
        if which == "on_episode_step" and not self._step_listened:
            return
        super()._make_on_episode_callback(which, idx, episodes)

    def _lean_sampler(self) -> SampleCategoricalActions | None:
        """The action sampler when the whole path is the lean one, else None."""
        to_module = getattr(self._env_to_module, "connectors", None)
        to_env = getattr(self._module_to_env, "connectors", None)
        if (
            isinstance(self.module, LeanPPOModule)
            and to_module is not None and len(to_module) == 1
            and isinstance(to_module[0], LatestObservationsToTensor)
            and to_env is not None and len(to_env) == 1
            and isinstance(to_env[0], SampleCategoricalActions)
        ):  # fmt: skip
            return to_env[0]
        return None

    def _sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None,
                explore: bool, random_actions: bool = False,
                force_reset: bool = False) -> list[SingleAgentEpisode]:  # fmt: skip
        sampler = self._lean_sampler()
        if num_timesteps is None or random_actions or sampler is None:
            return super()._sample(  # type: ignore[no-any-return]
                num_timesteps=num_timesteps, num_episodes=num_episodes, explore=explore,
                random_actions=random_actions, force_reset=force_reset,
            )  # fmt: skip
        return self._sample_steps(num_timesteps, explore, force_reset, sampler)

    def _sample_steps(self, num_timesteps: int, explore: bool, force_reset: bool,
                      sampler: SampleCategoricalActions) -> list[SingleAgentEpisode]:  # fmt: skip
        """RLlib's ``_sample`` for `num_timesteps`, with the module fed directly."""
        if force_reset or self._needs_initial_reset:
            self._reset_envs_and_episodes(explore)
        done: list[SingleAgentEpisode] = []
        steps = 0
        while steps < num_timesteps:
            # the module's input: the latest observations (RLlib's cache, kept across calls)
            to_module, self._cached_to_module = self._cached_to_module, None
            assert to_module is not None  # a reset or the last step left it
            to_env = self._act(to_module, explore, sampler)
            actions = to_env.pop(Columns.ACTIONS)
            results = self._try_env_step(actions)
            if results == ENV_STEP_FAILURE:  # the env was remade: start over, as RLlib does
                steps = 0
                self._reset_envs_and_episodes(explore)
                continue
            episodes = self._ongoing_episodes
            started = self._record(episodes, results, actions, to_env)
            steps += len(episodes) - len(started)  # a reset is not a step
            # what LatestObservationsToTensor stacks from the episodes, before any is replaced
            self._cached_to_module = {Columns.OBS: torch.from_numpy(np.array(results[0]))}
            self._after_step(episodes, started, done)
        return self._finish_sample(steps, done)

    def _record(self, episodes: list[SingleAgentEpisode], results: tuple[Any, ...],
                actions: Any, outputs: dict[str, Any]) -> list[int]:  # fmt: skip
        """Add a vector step's results to the episodes, as RLlib's loop does; the envs
        that reset instead (their episodes ended on the step before)."""
        observations, rewards, terminateds, truncateds, infos = results
        started = []
        for index, episode in enumerate(episodes):
            if not episode.is_reset:
                episode.add_env_reset(observation=observations[index], infos=infos[index])
                started.append(index)
                continue
            extra = {key: value[index] for key, value in outputs.items()}
            extra[WEIGHTS_SEQ_NO] = self._weights_seq_no
            episode.add_env_step(
                observation=observations[index], action=actions[index], reward=rewards[index],
                infos=infos[index], terminated=terminateds[index], truncated=truncateds[index],
                extra_model_outputs=extra,
            )  # fmt: skip
        return started

    def _act(self, to_module: dict[str, Any], explore: bool,
             sampler: SampleCategoricalActions) -> dict[str, Any]:  # fmt: skip
        """Actions, their log-probabilities and logits: the module's forward pass and the
        lean action sampler, without the pipelines around them."""
        if explore:
            out = self.module.forward_exploration(to_module)
        else:
            out = self.module.forward_inference(to_module)
        return sampler(rl_module=self.module, batch=out, episodes=self._ongoing_episodes,  # type: ignore[no-any-return]
                       explore=explore, shared_data=self._shared_data)  # fmt: skip

    def _after_step(self, episodes: list[SingleAgentEpisode], started: list[int],
                    done: list[SingleAgentEpisode]) -> None:  # fmt: skip
        """RLlib's callbacks after a step, env by env, and the ended episodes moved to
        `done` (numpy'd), each replaced by a new empty episode."""
        for index, episode in enumerate(episodes):
            which = "on_episode_start" if index in started else "on_episode_step"
            self._make_on_episode_callback(which, index, episodes)
            if episode.is_done:
                self._make_on_episode_callback("on_episode_end", index, episodes)
                done.append(episode.to_numpy() if self.episodes_to_numpy else episode)
                self._new_episode(index, episodes)

    def _finish_sample(
        self, steps: int, done: list[SingleAgentEpisode]
    ) -> list[SingleAgentEpisode]:
        """RLlib's end of ``_sample`` for a number of steps: the finished episodes, then the
        ongoing ones cut (their continuations stay to be sampled on), and the metrics."""
        self._done_episodes_for_metrics.extend(done)
        continuations = [
            episode.cut(len_lookback_buffer=self.config.episode_lookback_horizon)
            for episode in self._ongoing_episodes
        ]
        ongoing = []
        for episode in self._ongoing_episodes:
            if episode.t == 0:  # just reset: nothing in it yet
                continue
            episode.validate()
            self._ongoing_episodes_for_metrics[episode.id_].append(episode)
            ongoing.append(episode.to_numpy() if self.episodes_to_numpy else episode)
        self._ongoing_episodes = continuations
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=steps)
        self._increase_sampled_metrics(steps, len(done))
        return done + ongoing
