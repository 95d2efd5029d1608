"""Training runs end to end on real Ray and RLlib: smoke, checkpoints, archive, export, resume;
and local Ray confined to loopback and the run's folder."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from koholint.env.export import EXPORT_SCHEMA_VERSION
from koholint.explore.archive import Archive
from koholint.schemas.trainer import RunStatus
from koholint.store import LocalStore
from trainer.config import Deployment
from trainer.ledger import CheckpointLedger
from trainer.ppo.config import TrainConfig
from trainer.ppo.ray_node import check_cluster
from trainer.ppo.run import TrainingRun

TINY = {
    "total_env_steps": 512, "num_env_runners": 0, "envs_per_env_runner": 1, "train_batch_size": 256,
    "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128, "env": {"max_episode_steps": 128},
    "export_every_episodes": 1, "segment_steps": 64, "checkpoint_every_iterations": 1, "archive_restart_every": 2,
}  # fmt: skip


def listening_addresses(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state held by these processes (/proc)."""
    listening: dict[str, tuple[str, int]] = {}
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            hexaddr, hexport = fields[1].split(":")
            raw = bytes.fromhex(hexaddr)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            listening[fields[9]] = (socket.inet_ntop(family, raw), int(hexport, 16))
    found = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if inode in listening:
                found.add(listening[inode])
    return found


def processes_mentioning(text: str) -> set[int]:
    """Live processes whose command line, or one of whose open files, names `text` (Ray's
    session folder: its agents rename their command lines but keep its log files open)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().split(") ")[-1][0]
            files = [
                os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")
            ]
        except OSError:
            continue
        if state != "Z" and (text.encode() in command or any(text in name for name in files)):
            pids.add(int(entry))
    return pids


def is_loopback(address: str) -> bool:
    return address in ("127.0.0.1", "::1", "::ffff:127.0.0.1")


@pytest.mark.slow
def test_smoke_run_checkpoints_archives_exports_and_resumes(tmp_path: Path, monkeypatch):
    import ray

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Ray must write nothing there
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    run_folder = Path(deployment.run_dir) / "smoke"
    seen: list[int] = []
    addresses: set[tuple[str, int]] = set()
    sessions: list[str] = []

    def during(status: RunStatus) -> None:
        seen.append(status.env_steps)
        status.phase_one_env_steps = 128  # as a phase=both run's phase 1 would have set it
        if len(seen) == 1:
            node = ray._private.worker._global_node
            sessions.append(Path(node.get_session_dir_path()).name)  # in every Ray command line
            ray_processes = processes_mentioning(sessions[0]) | {os.getpid()}
            addresses.update(listening_addresses(ray_processes))
            check_cluster(ray._private.worker._global_node.gcs_address)  # the probe knows Ray

    status = TrainingRun(TrainConfig.load({**TINY, "run": "smoke"}, {}), deployment).run(
        on_iteration=during
    )
    assert status.state == "finished"
    assert status.env_steps >= 512
    assert seen == sorted(seen)
    assert addresses, "Ray listens somewhere"
    assert all(is_loopback(address) for address, _ in addresses), addresses
    # Ray's files under the run's folder; nothing in the home folder; no Ray process left.
    assert list((run_folder / "ray").glob("session_*/logs"))
    assert not (tmp_path / "home" / ".ray").exists()
    assert not (tmp_path / "home" / "ray_results").exists()
    assert (run_folder / "ray" / sessions[0]).is_dir()
    for _ in range(50):
        if not processes_mentioning(sessions[0]):
            break
        time.sleep(0.2)
    assert not processes_mentioning(sessions[0])

    store = LocalStore(deployment.store_url)
    ledger = CheckpointLedger(store, "smoke")
    assert len(ledger.records) == status.checkpoints >= 2
    assert Archive.load(store, "archives/smoke").cells  # the archive persisted
    manifests = [k for k in store.list("episodes/smoke/") if k.endswith("manifest.json")]
    assert manifests
    assert json.loads(store.get(manifests[0]))["schema_version"] == EXPORT_SCHEMA_VERSION
    assert (run_folder / "learning_curve.png").read_bytes().startswith(b"\x89PNG")

    # Resume by checkpoint name alone: the run that owns it continues.
    last = ledger.records[-1]
    resumed = TrainConfig.load(
        {**TINY, "resume_from": last.name, "total_env_steps": 128 + last.step + 768}, {}
    )
    again_run = TrainingRun(resumed, deployment)
    assert again_run.config.run == "smoke"
    stamps: list[tuple[float, int, int]] = []
    again = again_run.run(
        on_iteration=lambda s: stamps.append((time.perf_counter(), s.env_steps, s.iterations))
    )
    assert again.state == "finished"
    assert again.resumed_from == last.name
    assert again.phase_one_env_steps == 128  # a resume still counts the steps in all
    assert again.env_steps == last.step + 768  # the budget counts phase 1's 128 too
    assert stamps[0][1] > last.step  # counting continues from the checkpoint, not from zero
    assert stamps[0][2] == status.iterations + 1  # so do the iterations
    # The learning curve keeps the part before the resume.
    assert [p["env_steps"] for p in again_run.curve[: len(seen)]] == seen
    # Steps per second counts only what this process sampled: no faster than the steps
    # between the first and the last resumed iteration over the time between them.
    (first_time, _, _), (last_time, last_steps, _) = stamps[0], stamps[-1]
    upper = (last_steps - last.step) / (last_time - first_time)
    assert len(stamps) >= 3  # then counting the checkpoint's steps too would exceed the bound
    assert 0 < again.steps_per_second <= upper


def test_export_counts_are_reported_as_deltas_and_the_end_takes_the_totals(tmp_path: Path):
    from trainer.config import Deployment
    from trainer.ppo.envs import export_counts_since_last_call, finish_exports, process_exporter

    export_counts_since_last_call()  # start from what earlier tests in this process left
    exporter = process_exporter("deltas", Deployment(store_url=str(tmp_path / "store")))
    exporter.counts["dropped"] += 2  # as if the queue had been full twice
    assert export_counts_since_last_call()["dropped"] == 2
    assert export_counts_since_last_call()["dropped"] == 0
    totals = finish_exports(object(), run="deltas")  # the run's end closes and forgets it
    assert totals["dropped"] == 2
    assert process_exporter("deltas", Deployment(store_url=str(tmp_path / "store"))) is not exporter
    finish_exports(object(), run="deltas")


def test_a_run_names_itself_without_changing_the_config_it_was_given():
    given = TrainConfig.load({"resume_from": "smoke-step000000000512"}, {})
    run = TrainingRun(given)
    assert run.config.run == "smoke"  # the resumed checkpoint's run
    assert given.run == ""
    unnamed = TrainConfig.load({}, {})
    assert TrainingRun(unnamed).config.run.startswith("run-")
    assert unnamed.run == ""


def test_an_iteration_without_ended_episodes_keeps_the_last_episode_metrics():
    from trainer.ppo.iterations import read_result

    status = RunStatus(run="r")
    read_result({"env_runners": {"num_env_steps_sampled_lifetime": 256, "rooms": 3.0}}, status)
    read_result({"env_runners": {"num_env_steps_sampled_lifetime": 512, "rooms": float("nan")}},
                status)  # fmt: skip
    assert (status.iterations, status.env_steps, status.rooms_mean) == (2, 512, 3.0)


def test_the_curve_keeps_each_milestones_share_of_the_last_episodes_not_the_best_so_far():
    from trainer.ppo.curve import LearningCurve
    from trainer.ppo.iterations import read_result

    status, curve = RunStatus(run="r"), LearningCurve()
    for steps, share in ((256, 0.25), (512, 0.0)):
        read_result({"env_runners": {"num_env_steps_sampled_lifetime": steps,
                                     "reached_sword": share}}, status)  # fmt: skip
        curve.add(status)
    assert [point["reached_sword"] for point in curve.points] == [0.25, 0.0]
    assert status.reached["sword"] == 0.25  # the status keeps the best window


def test_phase_one_counts_against_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """total_env_steps bounds phase 1 and phase 2 together: a phase 1 that spends it all
    leaves nothing to robustify, and the run says which setting to raise."""
    import trainer.ppo.run as run_module

    def phase_one(config, status, run_dir, on_iteration):  # a win found late
        status.env_steps = 6_000
        return run_dir / "win.actions"

    monkeypatch.setattr(run_module, "run_phase_one", phase_one)
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    config = TrainConfig.load(
        {**TINY, "run": "both", "phase": "both", "total_env_steps": 5_000}, {}
    )
    run = TrainingRun(config, deployment)
    with pytest.raises(
        RuntimeError, match=r"took 6000 env steps of total_env_steps 5000.*--total-env-steps"
    ):
        run.run()
    assert run.status.state == "failed"
    assert run.status.env_steps_in_all == 6_000
