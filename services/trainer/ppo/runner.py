"""The lean sampling path's env runner: RLlib's SingleAgentEnvRunner without per-step metrics.

Every step, RLlib times each connector pipeline call and each connector in it (metric
timers), sums the lengths of all episodes going into and out of the env-to-module pipeline,
and calls ``on_episode_step`` for every env, listened to or not. With a runner's four envs
stepping at ~120 µs each, that bookkeeping is a tenth of its sampling time (BENCHMARKS.md).
This runner calls the same pipelines without a metrics logger and skips ``on_episode_step``
when no callback implements it; the episodes it returns are the ones RLlib's runner returns
(tested), and the per-iteration metrics (steps, episodes, returns) are RLlib's own.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from ray.rllib.connectors.module_to_env.module_to_env_pipeline import ModuleToEnvPipeline
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner


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
    """SingleAgentEnvRunner whose connector pipelines skip their per-step metrics and which
    makes ``on_episode_step`` callbacks only when one is implemented."""

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
