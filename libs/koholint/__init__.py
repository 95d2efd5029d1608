"""Koholint's shared library: schemas, RAM map, emulator adapter, environment and clients."""

import gymnasium as _gymnasium

__version__ = "0.1.0"

ENV_ID = "koholint/Zelda-v1"

if ENV_ID not in _gymnasium.registry:
    # The entry point is a string: the environment module loads only when an env is made.
    _gymnasium.register(
        id=ENV_ID, entry_point="koholint.env.zelda:ZeldaEnv", disable_env_checker=True
    )
