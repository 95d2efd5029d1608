"""The one way to build the game's env with its planner: ``make_env``.

Every caller that plays koholint/Zelda-v1 — phase 1's workers and replays, the
demonstration's replay, trajectory replays, trained-policy play and the trainer — builds it
here: the env from its settings, then hybrid control (``PlannerControlWrapper``) with the
named or given planner backend. The trainer's vector env builds each env without a planner
and puts the planner on with ``with_planner``, as ``make_env`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from koholint.env.wrappers import PlannerControlWrapper
from koholint.env.zelda import EnvConfig, ZeldaEnv
from koholint.planning.backends import Backend, make_backend
from koholint.schemas.env import EnvSettings

Planner = str | Backend | None
"""A planner backend: None or "off" for none, a name (``make_backend``: "rules", ...) or a
backend built by the caller (the trainer's planner service client)."""


def make_env(
    config: EnvConfig | EnvSettings | Mapping[str, Any] | None = None,
    *,
    planner: Planner = None,
    **overrides: Any,
) -> gym.Env[np.ndarray, Any]:
    """koholint/Zelda-v1 from `config` and `overrides` (``ZeldaEnv``'s settings), under
    hybrid control with `planner`; ``env.unwrapped`` is the ZeldaEnv."""
    return with_planner(ZeldaEnv(config, **overrides), planner)


def with_planner(env: gym.Env[np.ndarray, Any], planner: Planner) -> gym.Env[np.ndarray, Any]:
    """`env` under hybrid control with `planner` (unchanged for None or "off")."""
    if planner is None or planner == "off":
        return env
    backend = make_backend(planner) if isinstance(planner, str) else planner
    return PlannerControlWrapper(env, backend)
