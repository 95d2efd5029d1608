"""What a run checks before any work: each failure is a ``TrainConfigError`` that names the
setting and the fix, raised before Ray starts.

The object store must accept writes, a checkpoint to resume from must be in its run's
ledger, a fixed reward-model version must load, a planner that needs a service must have its
URL, and the Ray cluster and Redis, when set, must answer.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from koholint.game.rom import InvalidRomError, RomInfo, default_rom, read_rom, resolve_rom
from koholint.reward.model import RewardModelError
from koholint.schemas.trainer import CheckpointRecord
from koholint.store import ObjectStore, StoreError, open_store
from trainer.config import Deployment
from trainer.ledger import CheckpointLedger, UnknownCheckpointError, checkpoint_owner
from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.ray_node import check_cluster, host_and_port
from trainer.ppo.shaping import check_reward_model


@dataclass(frozen=True)
class Preflight:
    """What the checks opened and found, for the run to use."""

    store: ObjectStore
    resume: CheckpointRecord | None
    """the checkpoint to resume from (its ledger's record), or None"""
    world: RomInfo
    """the ROM the run plays (every env, phase 1's workers and the evaluations)"""


def preflight(config: TrainConfig, deployment: Deployment) -> Preflight:
    """Fail before any work, naming the setting, when something cannot work."""
    world = run_world(config.rom, deployment)
    store = _writable_store(deployment.store_url)
    resume = _checkpoint_to_resume(store, config.resume_from) if config.resume_from else None
    try:
        check_reward_model(config.reward.model, store, config.env.observation)
    except RewardModelError as error:
        raise TrainConfigError(f"reward.model: {error}", "reward.model") from None
    if config.planner in ("http", "llm-d") and not deployment.planner_url:
        raise TrainConfigError(
            f"planner={config.planner} needs planner_url (KOHOLINT_TRAINER_PLANNER_URL)",
            "planner_url",
        )
    if deployment.ray_address:
        check_cluster(deployment.ray_address)
    if deployment.redis_url:
        _reachable("redis_url / KOHOLINT_TRAINER_REDIS_URL", deployment.redis_url, 6379)
    return Preflight(store, resume, world)


def run_world(rom: str, deployment: Deployment) -> RomInfo:
    """The world of a run's `rom`: a name in the deployment's worlds folder first, else a
    path; empty: $KOHOLINT_ROM or the bundled cartridge."""
    try:
        if not rom:
            return read_rom(default_rom())
        named = Path(deployment.worlds_dir) / rom if deployment.worlds_dir else None
        return read_rom(resolve_rom(named if named is not None and named.exists() else rom))
    except InvalidRomError as error:
        raise TrainConfigError(f"rom: {error}", "rom") from None


def _writable_store(store_url: str) -> ObjectStore:
    try:
        store = open_store(store_url)
        store.check()
    except StoreError as error:
        raise TrainConfigError(
            f"store_url / KOHOLINT_TRAINER_STORE_URL={store_url!r}: {error}", "store_url"
        ) from error
    return store


def _checkpoint_to_resume(store: ObjectStore, name: str) -> CheckpointRecord:
    try:
        return CheckpointLedger(store, checkpoint_owner(name)).get(name)
    except (UnknownCheckpointError, StoreError) as error:
        raise TrainConfigError(f"resume_from: {error}", "resume_from") from None


def _reachable(setting: str, address: str, default_port: int) -> None:
    host, port = host_and_port(address, default_port)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as error:
        raise TrainConfigError(
            f"{setting}={address!r} is unreachable ({error}); check the address or unset it",
            setting.split(" ")[0],
        ) from error
