"""The trainer's extensions of RLlib (new API stack): what RLlib does not do, or does slower.

Each subclasses an RLlib class and keeps its results (tested against RLlib's own), unless
a setting asks for something else:

- ``algorithm`` — the ``PPOConfig`` chain that puts the pieces below together; the one
  place a run's RLlib algorithm is configured.
- ``sampling`` — the lean sampling path's connectors and module: RLlib's default
  pipelines are general and, for one flat observation and one discrete action, cost more
  per step than the emulator (``lean_sampling``).
- ``runner`` — ``LeanEnvRunner``: an env runner that steps that lean path without the
  per-step pipelines, timers and unheard callbacks of RLlib's loop; the same episodes.
- ``learner`` — ``LeanPPOTorchLearner``: PPO's learner with one finiteness check per step,
  a fused Adam, minibatches gathered by row index and metrics logged once an update; the
  same weights.
- ``sil`` — ``SilPPOTorchLearner``: self-imitation learning inside the PPO learner, with
  the winning trajectory pinned when robustifying (``sil.weight``, ``sil.demo``).
- ``overlap`` — ``OverlappedPPO``: the runners sample the next batch while the learner
  updates, learned as decoupled PPO (``overlap_sampling``).
- ``callbacks`` — ``KoholintCallbacks``: the game's metrics per episode (rooms, cells,
  wins, milestones) and the export queue's counts, for the run's status.
"""
