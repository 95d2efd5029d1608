"""The training environment: koholint/Zelda-v1 inside planner, curiosity, Go-Explore and export wrappers.

Each Ray env runner builds the env's registered vector env (``vector_entry_point``), wraps
every env in it with ``wrap_train_env`` and the vector env with ``wrap_train_vector``. The
Go-Explore archive is shared through a named Ray actor; segments are exported by one queue
per process.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Any

import gymnasium as gym
import numpy as np
import ray

from koholint.bus import RedisBus, connect_redis
from koholint.clients.planner import PlannerClient
from koholint.env.export import EXPORT_COUNTS, ExportQueue, announce_stored
from koholint.env.factory import with_planner
from koholint.env.rnd import RndConfig, sparse_allowance
from koholint.env.wrappers import (
    BonusWrapper,
    PositionPublisherWrapper,
    ProgressLevel,
    RewardModelWrapper,
    SegmentRecorder,
    ShapingWrapper,
)
from koholint.env.wrappers.curiosity import CuriosityVectorWrapper
from koholint.env.wrappers.positions import process_position_publisher
from koholint.env.zelda import EnvConfig
from koholint.explore.archive import Archive, Cell, CellRecord
from koholint.explore.curriculum import CurriculumWrapper
from koholint.explore.restarts import Frontier, GoExploreWrapper, LocalArchiveSource
from koholint.llm.client import TEXT_ROUTES
from koholint.planning.backends import Backend, make_backend
from koholint.schemas.trainer import RunStatus
from koholint.store import open_store
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.curriculum import RayCurriculumSource, curriculum_actor_name

logger = logging.getLogger(__name__)

# How long a run's end waits for each process's export queue: longer than one S3 write can
# take (koholint.store: S3_TIMEOUT, S3_RETRIES), shorter than forever.
EXPORT_DRAIN_SECONDS = 180.0
# How long a run's end then waits for the written segments' announcements: what is left
# stays in the store and ``announce_run_segments`` announces it.
ANNOUNCE_DRAIN_SECONDS = 30.0


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
    """ArchiveSource over the ArchiveActor: merges are sent without waiting, and what the
    archive knows is fetched in the background: ``known`` returns the last answer that
    arrived and asks again, so envs never wait on the actor mid-sample (they learn of other
    runners' cells one sync later). One per process (``process_archive_source``): a
    runner's envs sync on the same step and share one request."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._known: dict[Cell, int] = {}
        self._pending: Any = None
        self.known_here: dict[Cell, int] = {}
        """the fewest steps to each cell known to this process's envs (GoExploreWrapper's
        shared `known`): saved by one, not saved again by the others"""

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None:
        self.actor.merge.remote(cells)

    def frontier(self, seed: int) -> Frontier | None:
        return ray.get(self.actor.frontier.remote(seed))  # type: ignore[no-any-return]

    def known(self) -> dict[Cell, int]:
        if self._pending is not None and ray.wait([self._pending], timeout=0)[0]:
            self._known, self._pending = ray.get(self._pending), None
        if self._pending is None:
            self._pending = self.actor.known.remote()
        return self._known


_archive_sources: dict[str, RayArchiveSource] = {}
_archive_sources_lock = threading.Lock()


def process_archive_source(actor_name: str) -> RayArchiveSource:
    """One RayArchiveSource per process and archive actor (by the actor's id: a resumed run
    in the same process starts a new actor under the same name)."""
    actor = ray.get_actor(actor_name)
    key = actor._actor_id.hex()
    with _archive_sources_lock:
        if key not in _archive_sources:
            _archive_sources[key] = RayArchiveSource(actor)
        return _archive_sources[key]


_exporters: dict[tuple[str, str, str], ExportQueue] = {}
_exporters_lock = threading.Lock()


def process_exporter(run: str, deployment: Deployment) -> ExportQueue:
    """One export queue per process, run and destination; closed by the run's end
    (``finish_exports``), so a process that hosts many runs counts each run on its own."""
    with _exporters_lock:
        key = (run, deployment.store_url, deployment.redis_url)
        if key not in _exporters:
            bus = None
            if deployment.redis_url:
                client = connect_redis(deployment.redis_url, timeout_s=deployment.redis_timeout_s)
                bus = RedisBus(client)
            _exporters[key] = ExportQueue(open_store(deployment.store_url), bus=bus)
        return _exporters[key]


_reported: dict[int, dict[str, float]] = {}


def export_counts_since_last_call() -> dict[str, float]:
    """What this process's export queues counted (``EXPORT_COUNTS``, and ``wait_seconds``)
    since the last call: the iterations' progress. The run's end takes each queue's totals."""
    deltas = dict.fromkeys((*EXPORT_COUNTS, "wait_seconds"), 0.0)
    with _exporters_lock:
        for queue in _exporters.values():
            now: dict[str, float] = {**queue.counts, "wait_seconds": queue.wait_seconds}
            last = _reported.setdefault(id(queue), dict.fromkeys(deltas, 0.0))
            for name in deltas:
                deltas[name] += now[name] - last[name]
                last[name] = now[name]
    return deltas


def finish_exports(runner: Any, run: str) -> dict[str, float]:
    """On an env runner at the run's end: close its envs (each recorder hands over its
    episode's last, partial segment), then close this process's export queues of `run` once
    their segments are written and announced (bounded), and return their totals, with
    ``unannounced``. Closing twice is harmless: the runner's stop closes again."""
    if getattr(runner, "env", None) is not None:
        runner.env.close()
    with _exporters_lock:
        keys = [key for key in _exporters if key[0] == run]
        queues = [_exporters.pop(key) for key in keys]
    totals = dict.fromkeys((*EXPORT_COUNTS, "unannounced", "wait_seconds"), 0.0)
    for queue in queues:
        if not queue.flush(EXPORT_DRAIN_SECONDS, announced=False):
            logger.warning("export queue not written after %.0f s", EXPORT_DRAIN_SECONDS,
                           extra={"event": "export_not_drained"})  # fmt: skip
        counts = {**queue.close(ANNOUNCE_DRAIN_SECONDS), "wait_seconds": queue.wait_seconds}
        _reported.pop(id(queue), None)
        for name, count in counts.items():
            totals[name] += count
    return totals


def drain_exports(algo: Any, config: TrainConfig, status: RunStatus) -> None:
    """Every env runner's segments written and announced before the run ends, the status's
    export counts set to their totals (``unannounced``: written, not yet on the stream;
    ``lost``: never written). Never raises: a runner that died takes its queue with it (its
    segments keep the counts the iterations reported), and the run's error is the one to
    report."""
    try:
        counts = algo.env_runner_group.foreach_env_runner(
            functools.partial(finish_exports, run=config.run), local_env_runner=True,
            timeout_seconds=EXPORT_DRAIN_SECONDS + ANNOUNCE_DRAIN_SECONDS + 60,
        )  # fmt: skip
    except Exception as error:
        logger.warning("could not drain the env runners' exports: %s", error,
                       extra={"event": "export_not_drained"})  # fmt: skip
        counts = []
    export = status.export
    if counts and all(counts):
        for name in (*EXPORT_COUNTS, "unannounced"):
            export[name] = sum(int(c.get(name, 0)) for c in counts)
        status.export_wait_seconds = sum(float(c.get("wait_seconds", 0)) for c in counts)
    export["lost"] = sum(export.get(name, 0) for name in ("dropped", "failed", "abandoned"))


def announce_run_segments(
    config: TrainConfig, deployment: Deployment, export: dict[str, int]
) -> None:
    """Announce every stored segment of the run whose notice never went out (a stalled or
    restarted Redis, a crashed predecessor of a resumed run): the store is the record.
    Leaves `export["unannounced"]` as it was when Redis cannot be reached."""
    if not (config.export_every_episodes and deployment.redis_url):
        return
    try:
        bus = RedisBus(connect_redis(deployment.redis_url, timeout_s=deployment.redis_timeout_s))
        found = announce_stored(open_store(deployment.store_url), bus, config.run)
    except Exception as error:
        logger.warning("could not announce the run's stored segments: %s", error,
                       extra={"event": "segments_not_announced"})  # fmt: skip
        return
    export["unannounced"] = 0
    if found["announced"]:
        logger.info("announced %d stored segments of %d", found["announced"], found["stored"],
                    extra={"event": "segments_announced"})  # fmt: skip


def planner_backend(kind: str, url: str, token: str = "") -> Backend:
    """The hybrid wrapper's decider: in-process, or the planner service over HTTP; `token`
    is the planner's (http) or the language-model server's."""
    if kind == "http":
        return PlannerClient(url, token=token)
    return make_backend(
        kind, base_url=url, models={route: route for route in TEXT_ROUTES}, api_key=token
    )


def rllib_env_config(
    config: TrainConfig, deployment: Deployment, archive_actor: str
) -> dict[str, Any]:
    """What RLlib passes to ``gym.make_vec(ENV_ID, n, vectorization_mode="vector_entry_point")``
    on each env runner: the env's settings (validated once, in TrainConfig) and the wrapping."""
    wrap = functools.partial(wrap_train_env, config, deployment, archive_actor)
    vector = "episode-end" if config.lean_sampling else "sync"
    # nothing in the trainer reads info['state'], and building it costs per step
    env = EnvConfig.parse({**dict(config.env), "info_state": False})
    settings = {"config": env, "wrap": wrap, "vector": vector}
    if config.curiosity_weight > 0:  # one RND pass a step for all of a runner's envs
        settings["wrap_vector"] = functools.partial(wrap_train_vector, config)
    return settings


def wrap_train_vector(
    config: TrainConfig, envs: gym.vector.VectorEnv[Any, Any, Any]
) -> gym.vector.VectorEnv[Any, Any, Any]:
    """The trainer's wrapper around a runner's whole vector env: batched RND curiosity."""
    allowance = sparse_allowance(config.env.reward_mode, config.env.reward_weights.win,
                                 config.env.max_episode_steps)  # fmt: skip
    return CuriosityVectorWrapper(envs, weight=config.curiosity_weight, rnd=RndConfig(),
                                  allowance_per_step=allowance)  # fmt: skip


def reward_model_wrapper(config: TrainConfig, env: gym.Env[np.ndarray, Any]) -> RewardModelWrapper:
    """R_phi in the reward, as the run's reward.mode says (a potential or a bonus), or the
    hand-written potential in its place (reward.hand_potential)."""
    if config.reward.hand_potential != "off":
        return ShapingWrapper(env, gamma=config.gamma, scale=config.reward.shaping_scale,
                              potential=ProgressLevel(env))  # fmt: skip
    if config.reward.mode == "bonus":
        return BonusWrapper(env, coefficient=config.reward.bonus_coefficient)
    return ShapingWrapper(env, gamma=config.gamma, scale=config.reward.shaping_scale)


def wrap_train_env(
    config: TrainConfig,
    deployment: Deployment,
    archive_actor: str,
    env: gym.Env[np.ndarray, Any],
    index: int,
) -> gym.Env[np.ndarray, Any]:
    """The trainer's wrappers around env number `index` of a runner (curiosity wraps the
    runner's vector env: ``wrap_train_vector``)."""
    if config.planner != "off":
        token = deployment.planner_token.get_secret_value()
        env = with_planner(env, planner_backend(config.planner, deployment.planner_url, token))
    robustify = config.phase in ("robustify", "both")
    if robustify:  # the curriculum chooses every start: the archive's restarts stay off
        actor = ray.get_actor(curriculum_actor_name(config.run))
        env = CurriculumWrapper(
            env, RayCurriculumSource(actor), end_on_death=config.curriculum.end_on_death
        )
    if config.archive_restart_every and not robustify:
        source = process_archive_source(archive_actor)
        env = GoExploreWrapper(
            env, source, restart_every=config.archive_restart_every, known=source.known_here
        )
    if config.reward.model or config.reward.hand_potential != "off":
        # R_phi is off until the driver hands over a version (trainer/ppo/shaping.py)
        env = reward_model_wrapper(config, env)
    if config.export_every_episodes:
        exporter = process_exporter(config.run, deployment)
        env = SegmentRecorder(
            env,
            exporter,
            run=config.run,
            every=config.export_every_episodes,
            segment_steps=config.segment_steps,
        )
    if deployment.redis_url:  # the console's live map: every 32nd step, never stalls sampling
        env = PositionPublisherWrapper(
            env, process_position_publisher(deployment.redis_url, timeout_s=deployment.redis_timeout_s),
            run=config.run,
            env_id=f"{os.getpid()}-{index}",
        )  # fmt: skip
    return env
