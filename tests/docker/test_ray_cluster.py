"""Ray across containers (compose.yaml's profile `ray`): a head and two workers on their own
network; `koholint train` drives the cluster from the head (as a KubeRay RayJob does), its
env runners on the workers; a worker that hosts an env runner is killed mid-run and the run
still finishes with its checkpoints."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest
from compose_support import Fleet, require_engine_and_images, wait_for

TRAIN = ["koholint", "train", "--run", "across", "--workers", "2", "--envs", "2",
         "--steps", "40960", "--batch", "1024", "--minibatch", "256", "--num-epochs", "1",
         "--archive-restart-every", "0", "--checkpoint-every-iterations", "1",
         "--env-max-episode-steps", "256", "--run-dir", "/tmp/runs", "--store", "/tmp/runs/store"]  # fmt: skip


def runners_on(container: str) -> int:
    """Env-runner actor processes living in `container`."""
    listed = subprocess.run(
        ["docker", "exec", container, "python", "-c",
         "import pathlib\nfor p in pathlib.Path('/proc').glob('[0-9]*/cmdline'):\n"
         "    print(p.read_bytes().split(b'\\0')[0].decode(errors='replace'))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    titles = listed.stdout.splitlines()  # Ray titles an actor's process ray::<Class>[.method()]
    return sum(line.startswith("ray::") and "EnvRunner" in line for line in titles)


@pytest.mark.slow  # ~3 minutes: three Ray nodes in containers, a 40,960-step run
@pytest.mark.timeout(900)
@pytest.mark.xdist_group("fleet")
def test_a_run_across_containers_survives_a_lost_worker() -> None:
    require_engine_and_images()
    cluster = Fleet(f"koholint-ray-{os.getpid()}", files=("compose.yaml",), profiles=("ray",))
    try:
        cluster.up("ray-head", "ray-worker")
        head = cluster.container("ray-head")
        workers = cluster.container("ray-worker").split()
        assert len(workers) == 2
        run = subprocess.Popen(["docker", "exec", "-e", "RAY_ADDRESS=127.0.0.1:6379", head, *TRAIN],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        placed = wait_for("both env runners placed on the workers",
                          lambda: (counts := {w: runners_on(w) for w in workers})
                          and sum(counts.values()) == 2 and counts, timeout=180)  # fmt: skip
        assert runners_on(head) == 0  # the head offers no CPU: runners live on the workers
        time.sleep(5)  # a few iterations in
        victim = max(placed, key=lambda worker: placed[worker])
        subprocess.run(["docker", "kill", victim], check=True, capture_output=True)
        output, _ = run.communicate(timeout=600)
        assert run.returncode == 0, output[-3000:]
        finished = re.search(r"finished after (\d+) steps in \d+ iterations", output)
        assert finished, output[-3000:]
        assert int(finished.group(1)) >= 40960
        assert re.search(r"checkpoints (\d+)", output), output[-1000:]
    finally:
        cluster.down(volumes=True)
