"""The RL job: PPO on RLlib's new API stack, its envs, connectors and callbacks."""
