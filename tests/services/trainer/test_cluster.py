"""The trainer on a real multi-node Ray cluster: `ray start --head` and a second node process on
this machine, env runners on both nodes, checkpoint and archive in the shared store, and the
worker node killed mid-run: RLlib's fault-tolerant env runners carry the run to its end."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from koholint.env.archive import Archive
from koholint.schemas.trainer import RunStatus
from koholint.store import LocalStore
from trainer.ledger import CheckpointLedger
from trainer.ppo.config import Deployment, resolve
from trainer.ppo.run import TrainingRun

pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).with_name("ray"))
RUN = {
    "total_env_steps": 2048, "num_env_runners": 2, "envs_per_env_runner": 1,
    "train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128,
    "env": {"max_episode_steps": 128}, "export_every_episodes": 0, "checkpoint_every_iterations": 1,
    "archive_restart_every": 2,
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def processes_under(folder: str) -> set[int]:
    """Live processes whose command line names `folder` (a node's temp dir: its raylet, its
    workers and agents all carry the session path)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if folder.encode() in command:
            pids.add(int(entry))
    return pids


def kill_all(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Cluster:
    address: str
    head_dir: str
    worker_dir: str

    def worker_node_ids(self) -> set[str]:
        import ray

        return {
            node["NodeID"]
            for node in ray.nodes()
            if node["Alive"] and self.worker_dir in node.get("RayletSocketName", "")
        }


def ray_start(arguments: list[str], environment: dict[str, str]) -> None:
    result = subprocess.run(
        [RAY, "start", *arguments, "--num-gpus=0", "--disable-usage-stats"],
        env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """Two Ray nodes on this machine, each with its own temp dir (short paths: Ray's socket
    names must fit in 107 bytes). Token auth off: Ray reads the auth mode once per process,
    and this process may already have run a local Ray with a token of its own."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1")  # several nodes on one host
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    environment = dict(os.environ)
    head_dir, worker_dir = tempfile.mkdtemp(prefix="kh-"), tempfile.mkdtemp(prefix="kw-")
    port = free_port()
    address = f"127.0.0.1:{port}"
    try:
        # The head has room for one env runner (and the driver's archive actor, 0 CPUs), the
        # worker for one: the runners are spread over both nodes.
        ray_start(
            ["--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
             "--include-dashboard=false", f"--temp-dir={head_dir}"],
            environment,
        )  # fmt: skip
        ray_start(
            [f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
             f"--temp-dir={worker_dir}"],
            environment,
        )  # fmt: skip
        yield Cluster(address, head_dir, worker_dir)
    finally:
        kill_all(processes_under(worker_dir) | processes_under(head_dir))
        shutil.rmtree(head_dir, ignore_errors=True)
        shutil.rmtree(worker_dir, ignore_errors=True)


def env_runner_nodes() -> list[str]:
    """The node of every live env runner (the GCS actor table: works without a dashboard)."""
    from ray._private import state

    return [
        actor["Address"]["NodeID"]
        for actor in state.actors().values()
        if actor["ActorClassName"].endswith("EnvRunner") and actor["State"] == "ALIVE"
    ]


def test_training_spreads_over_two_nodes_and_survives_losing_the_worker(cluster, tmp_path):
    deployment = Deployment(
        store_url=str(tmp_path / "store"),
        run_dir=str(tmp_path / "runs"),
        ray_address=cluster.address,
    )
    config = resolve(RUN, environ={})
    seen: dict[str, object] = {}

    def on_iteration(status: RunStatus) -> None:
        if status.iterations == 1:
            workers = cluster.worker_node_ids()
            seen["worker_nodes"] = workers
            seen["nodes"] = env_runner_nodes()
            seen["on_worker"] = sum(node in workers for node in seen["nodes"])
            kill_all(processes_under(cluster.worker_dir))  # the worker node dies mid-run
        elif status.iterations > 1:
            seen["alive_after"] = env_runner_nodes()
            seen["steps_after"] = status.env_steps

    status = TrainingRun(config, deployment).run(on_iteration=on_iteration)

    assert len(seen["nodes"]) == 2, seen
    assert seen["on_worker"] == 1, seen  # one env runner on each node
    assert status.state == "finished", status
    # Sampling went on without the worker's runner (RLlib restarts failed env runners where
    # there is room, and samples from the healthy ones meanwhile).
    assert seen["steps_after"] == status.env_steps
    assert seen["alive_after"]
    assert not set(seen["alive_after"]) & set(seen["worker_nodes"])
    assert status.env_steps >= RUN["total_env_steps"]
    store = LocalStore(tmp_path / "store")
    checkpoints = CheckpointLedger(store, status.run).records
    assert len(checkpoints) == status.checkpoints >= 2
    assert checkpoints[-1].step == status.env_steps  # the last one, after losing the worker
    assert Archive.load(store, f"archives/{status.run}").cells  # the archive persisted
