"""The training environment: koholint/Zelda-v1 inside planner, curiosity, Go-Explore and export wrappers.

Built inside each Ray env runner from a plain dict (RLlib's env_config). The Go-Explore
archive is shared through a named Ray actor; segments are exported by one queue per process.
"""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym
import numpy as np
import ray

from koholint.bus import RedisBus
from koholint.clients.planner import PlannerClient
from koholint.env.archive import Archive, Cell, CellRecord
from koholint.env.export import EXPORT_COUNTS, ExportQueue
from koholint.env.rnd import RndConfig
from koholint.env.vector import EpisodeEndVectorEnv
from koholint.env.wrappers import (
    CuriosityWrapper,
    Frontier,
    GoExploreWrapper,
    LocalArchiveSource,
    PlannerControlWrapper,
    SegmentRecorder,
)
from koholint.env.zelda import ZeldaEnv
from koholint.planning.backends import Backend, make_backend
from koholint.planning.llm import TEXT_ROUTES
from koholint.store import open_store

ENV_NAME = "koholint-train"
TRAINER_KEYS = (
    "run",
    "store_url",
    "redis_url",
    "archive_actor",
    "curiosity_weight",
    "archive_restart_every",
    "export_every_episodes",
    "segment_steps",
    "planner",
    "planner_url",
)


@ray.remote(num_cpus=0)
class ArchiveActor:
    """The run's Go-Explore archive, shared by every env runner, persisted in the object store."""

    def __init__(self, store_url: str, prefix: str) -> None:
        self.archive = Archive.load(open_store(store_url), prefix)
        self._source = LocalArchiveSource(self.archive)

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None:
        self._source.merge(cells)

    def frontier(self, seed: int) -> Frontier | None:
        return self._source.frontier(seed)

    def known(self) -> dict[Cell, int]:
        return self._source.known()

    def size(self) -> int:
        return len(self.archive)

    def save(self) -> int:
        self.archive.save()
        return len(self.archive)


class RayArchiveSource:
    """ArchiveSource over the ArchiveActor: merges are sent without waiting."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None:
        self.actor.merge.remote(cells)

    def frontier(self, seed: int) -> Frontier | None:
        return ray.get(self.actor.frontier.remote(seed))  # type: ignore[no-any-return]

    def known(self) -> dict[Cell, int]:
        return ray.get(self.actor.known.remote())  # type: ignore[no-any-return]


_exporters: dict[tuple[str, str], ExportQueue] = {}
_exporters_lock = threading.Lock()


def process_exporter(store_url: str, redis_url: str) -> ExportQueue:
    """One export queue per process and destination."""
    with _exporters_lock:
        key = (store_url, redis_url)
        if key not in _exporters:
            bus = None
            if redis_url:
                import redis

                bus = RedisBus(redis.Redis.from_url(redis_url))
            _exporters[key] = ExportQueue(open_store(store_url), bus=bus)
        return _exporters[key]


_reported = dict.fromkeys(EXPORT_COUNTS, 0)


def export_counts_since_last_call() -> dict[str, int]:
    """Segments written, dropped and failed by this process's export queues since the last call."""
    with _exporters_lock:
        totals = {
            name: sum(getattr(queue, name) for queue in _exporters.values()) for name in _reported
        }
    deltas = {name: totals[name] - _reported[name] for name in _reported}
    _reported.update(totals)
    return deltas


def planner_backend(kind: str, url: str) -> Backend:
    """The hybrid wrapper's decider: in-process, or the planner service over HTTP."""
    if kind == "http":
        return PlannerClient(url)
    return make_backend(kind, base_url=url, models={route: route for route in TEXT_ROUTES})


def make_train_env(env_config: Any) -> gym.Env[np.ndarray, Any] | EpisodeEndVectorEnv:
    """One wrapped env; or, when RLlib asks for a vector (``num_envs`` in the config, with
    ``gym_env_vectorize_mode="vector_entry_point"``), that many in an EpisodeEndVectorEnv."""
    settings = dict(env_config)
    count = settings.pop("num_envs", None)
    if count is None:
        worker, slot = (
            getattr(env_config, name, 0) or 0 for name in ("worker_index", "vector_index")
        )
        return _wrapped_env(settings, worker * 1000 + slot)
    # RLlib passes a plain dict here (the worker index is lost): RND seeds by slot.
    return EpisodeEndVectorEnv(
        [lambda index=index: _wrapped_env(dict(settings), index) for index in range(count)]
    )


def _wrapped_env(settings: dict[str, Any], index: int) -> gym.Env[np.ndarray, Any]:
    trainer = {key: settings.pop(key) for key in TRAINER_KEYS}
    env: gym.Env[np.ndarray, Any] = ZeldaEnv(settings)
    if trainer["planner"] != "off":
        env = PlannerControlWrapper(
            env, planner_backend(trainer["planner"], trainer["planner_url"])
        )
    if trainer["curiosity_weight"] > 0:
        env = CuriosityWrapper(env, weight=trainer["curiosity_weight"], rnd=RndConfig(seed=index))
    if trainer["archive_restart_every"]:
        env = GoExploreWrapper(
            env,
            RayArchiveSource(ray.get_actor(trainer["archive_actor"])),
            restart_every=trainer["archive_restart_every"],
        )
    if trainer["export_every_episodes"]:
        exporter = process_exporter(trainer["store_url"], trainer["redis_url"])
        env = SegmentRecorder(
            env,
            exporter,
            run=trainer["run"],
            every=trainer["export_every_episodes"],
            segment_steps=trainer["segment_steps"],
        )
    return env
