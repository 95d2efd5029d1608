"""The training environment: koholint/Zelda-v1 inside planner, curiosity, Go-Explore and export wrappers.

Each Ray env runner builds the env's registered vector env (``vector_entry_point``) and wraps
every env in it with ``wrap_train_env``. The Go-Explore archive is shared through a named Ray
actor; segments are exported by one queue per process.
"""

from __future__ import annotations

import functools
import os
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
from koholint.env.wrappers import (
    CuriosityWrapper,
    CurriculumWrapper,
    Frontier,
    GoExploreWrapper,
    LocalArchiveSource,
    PlannerControlWrapper,
    PositionPublisherWrapper,
    SegmentRecorder,
    ShapingWrapper,
)
from koholint.env.wrappers.positions import process_position_publisher
from koholint.planning.backends import Backend, make_backend
from koholint.planning.llm import TEXT_ROUTES
from koholint.store import open_store
from trainer.ppo.config import Deployment, TrainConfig
from trainer.ppo.curriculum import RayCurriculumSource, curriculum_actor_name


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


def rllib_env_config(
    config: TrainConfig, deployment: Deployment, archive_actor: str
) -> dict[str, Any]:
    """What RLlib passes to ``gym.make_vec(ENV_ID, n, vectorization_mode="vector_entry_point")``
    on each env runner: the env's settings (validated once, in TrainConfig) and the wrapping."""
    wrap = functools.partial(wrap_train_env, config, deployment, archive_actor)
    vector = "episode-end" if config.lean_sampling else "sync"
    return {"config": config.env, "wrap": wrap, "vector": vector}


def wrap_train_env(
    config: TrainConfig,
    deployment: Deployment,
    archive_actor: str,
    env: gym.Env[np.ndarray, Any],
    index: int,
) -> gym.Env[np.ndarray, Any]:
    """The trainer's wrappers around env number `index` of a runner (RND seeds by index)."""
    if config.planner != "off":
        env = PlannerControlWrapper(env, planner_backend(config.planner, deployment.planner_url))
    if config.curiosity_weight > 0:
        env = CuriosityWrapper(env, weight=config.curiosity_weight, rnd=RndConfig(seed=index))
    robustify = config.phase in ("robustify", "both")
    if robustify:  # the curriculum chooses every start: the archive's restarts stay off
        actor = ray.get_actor(curriculum_actor_name(config.run))
        env = CurriculumWrapper(
            env, RayCurriculumSource(actor), end_on_death=config.curriculum_end_on_death
        )
    if config.archive_restart_every and not robustify:
        env = GoExploreWrapper(
            env,
            RayArchiveSource(ray.get_actor(archive_actor)),
            restart_every=config.archive_restart_every,
        )
    if config.reward_model:  # off until the driver hands over a version (trainer/ppo/shaping.py)
        env = ShapingWrapper(env, gamma=config.gamma, scale=config.shaping_scale)
    if config.export_every_episodes:
        exporter = process_exporter(deployment.store_url, deployment.redis_url)
        env = SegmentRecorder(
            env,
            exporter,
            run=config.run,
            every=config.export_every_episodes,
            segment_steps=config.segment_steps,
        )
    if deployment.redis_url:  # the console's live map: every 32nd step, never stalls sampling
        env = PositionPublisherWrapper(
            env, process_position_publisher(deployment.redis_url), run=config.run,
            env_id=f"{os.getpid()}-{index}",
        )  # fmt: skip
    return env
