"""The trainer on a real multi-node Ray cluster: `ray start --head` and a second node process on
this machine, env runners on both nodes, checkpoint and archive in the shared store, and the
worker node killed mid-run: RLlib's fault-tolerant env runners carry the run to its end."""

from __future__ import annotations

import contextlib
import json
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

from koholint.explore.archive import Archive
from koholint.schemas.trainer import RunStatus
from koholint.store import LocalStore
from trainer.ledger import CheckpointLedger

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


# The driver runs in a process of its own: Ray keeps per-process state (its auth mode among
# it) from any earlier local run in this test process. It kills the worker node's processes
# after the first iteration and prints what it saw as JSON.
DRIVER = """
import contextlib, json, os, signal, sys, time
from pathlib import Path
import ray
from ray._private import state
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun

address, worker_dir, folder, settings = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])

def runner_nodes():
    # the GCS actor table: works without a dashboard
    return [actor["Address"]["NodeID"] for actor in state.actors().values()
            if actor["ActorClassName"].endswith("EnvRunner") and actor["State"] == "ALIVE"]

def kill_node(folder):
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if (entry.isdigit() and int(entry) != os.getpid()  # this driver names it too
                    and folder.encode() in Path(f"/proc/{entry}/cmdline").read_bytes()):
                os.kill(int(entry), signal.SIGKILL)

seen = {}
def on_iteration(status):
    if status.iterations == 1:
        seen["worker_nodes"] = [node["NodeID"] for node in ray.nodes()
                                if node["Alive"] and worker_dir in node.get("RayletSocketName", "")]
        seen["nodes"] = runner_nodes()
        kill_node(worker_dir)  # the worker node dies mid-run
    else:
        if "alive_after" not in seen:
            # The GCS marks the dead node's actors after its health checks fail (seconds);
            # a short run can reach its next iteration first.
            deadline = time.monotonic() + 60
            while set(runner_nodes()) & set(seen["worker_nodes"]) and time.monotonic() < deadline:
                time.sleep(0.5)
        seen["alive_after"] = runner_nodes()
        seen["steps_after"] = status.env_steps

deployment = Deployment(store_url=str(folder / "store"), run_dir=str(folder / "runs"), ray_address=address)
status = TrainingRun(TrainConfig.load(settings, environ={}), deployment).run(on_iteration=on_iteration)
print(json.dumps({"status": status.model_dump(mode="json"), **seen}))
"""


def test_training_spreads_over_two_nodes_and_survives_losing_the_worker(cluster, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, cluster.address, cluster.worker_dir, str(tmp_path),
         json.dumps(RUN)],
        env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    status = RunStatus.model_validate(seen["status"])

    assert len(seen["nodes"]) == 2, seen
    assert len(set(seen["nodes"]) & set(seen["worker_nodes"])) == 1, seen  # a runner per node
    assert status.state == "finished", status
    # Sampling went on without the worker's runner (RLlib restarts failed env runners where
    # there is room, and samples from the healthy ones meanwhile).
    assert seen["steps_after"] == status.env_steps >= RUN["total_env_steps"]
    assert seen["alive_after"]
    assert not set(seen["alive_after"]) & set(seen["worker_nodes"])
    store = LocalStore(tmp_path / "store")
    checkpoints = CheckpointLedger(store, status.run).records
    assert len(checkpoints) == status.checkpoints >= 2
    assert checkpoints[-1].step == status.env_steps  # the last one, after losing the worker
    assert Archive.load(store, f"archives/{status.run}").cells  # the archive persisted
