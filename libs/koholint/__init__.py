"""Koholint's shared library: schemas, RAM map, emulator adapter, environment and clients."""

import gymnasium as _gymnasium

__version__ = "0.1.0"

ENV_ID = "koholint/Zelda-v1"

if ENV_ID not in _gymnasium.registry:
    # Entry points are strings: the environment module loads only when an env is made.
    # gym.make_vec(ENV_ID, n, vectorization_mode="vector_entry_point") builds the lean vector
    # env (as Gymnasium's CartPole does); RLlib asks for it with that vectorize mode.
    _gymnasium.register(
        id=ENV_ID,
        entry_point="koholint.env.zelda:ZeldaEnv",
        vector_entry_point="koholint.env.vector:make_vector_env",
        disable_env_checker=True,
    )
