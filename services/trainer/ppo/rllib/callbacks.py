"""Metrics for RLlib: rooms, cells, wins and milestones per episode (averaged by the metrics
logger), the emulator's frames and the policy's steps of ended episodes (summed), and what
each env runner's export queue counted."""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback


class KoholintCallbacks(RLlibCallback):
    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if metrics_logger is None or not isinstance(info, dict):
            return
        metrics_logger.log_value("rooms", float(info.get("rooms", 0)), reduce="mean", window=100)
        metrics_logger.log_value("cells", float(info.get("cells", 0)), reduce="mean", window=100)
        metrics_logger.log_value(
            "won", 1.0 if episode.is_terminated else 0.0, reduce="mean", window=100
        )
        for name, reached in (info.get("milestones") or {}).items():
            metrics_logger.log_value(f"reached_{name}", float(reached), reduce="mean", window=100)
        # The emulator's frames beside the policy's steps: the planner's macros (counted apart)
        metrics_logger.log_value(
            "emulator_frames", float(info.get("frame", 0)), reduce="lifetime_sum"
        )
        metrics_logger.log_value("episode_steps", float(len(episode)), reduce="lifetime_sum")

    def on_sample_end(self, *, metrics_logger: Any = None, **kwargs: Any) -> None:
        from trainer.ppo.envs import export_counts_since_last_call

        if metrics_logger is None:
            return
        for name, count in export_counts_since_last_call().items():
            key = "export_wait_seconds" if name == "wait_seconds" else f"export_segments_{name}"
            metrics_logger.log_value(key, count, reduce="lifetime_sum")
