"""Per-episode metrics for RLlib: rooms, cells and wins, averaged by the metrics logger."""

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
