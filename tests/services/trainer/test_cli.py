"""`koholint train` as a user runs it: one-line preflight errors, nothing from Ray before the
progress bar, and nothing left behind (no ~/.ray, no ~/ray_results, no Ray process)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.services.trainer.ppo.test_run import processes_mentioning

KOHOLINT = str(Path(sys.executable).parent / "koholint")


def train(tmp_path: Path, *flags: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs the command; its output as written (no newline translation: the bar uses \\r)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environ = {**os.environ, "HOME": str(home)}
    command = [
        KOHOLINT,
        "train",
        "--store",
        str(tmp_path / "store"),
        "--run-dir",
        str(tmp_path / "runs"),
        *flags,
    ]
    done = subprocess.run(command, env=environ, capture_output=True, timeout=timeout)
    return subprocess.CompletedProcess(
        command, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--resume", "nope-step000000000001"), "resume_from: no checkpoint 'nope-step000000000001' in run nope"),
        (("--steps", "lots"), "total_env_steps (flag): expected a JSON number"),
        (("--env-frame-skip", "0"), "env.frame_skip (flag): Input should be greater than or equal to 1"),
        (("--ray-address", "127.0.0.1:1"), "RAY_ADDRESS='127.0.0.1:1' is unreachable"),
    ],
)  # fmt: skip
def test_preflight_errors_print_one_line_before_any_work(tmp_path: Path, flags, message):
    result = train(tmp_path, *flags)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr  # one line, no traceback
    assert result.stderr.startswith("koholint train: ")
    assert message in result.stderr
    assert not (tmp_path / "runs").exists()  # nothing started: no run folder, no Ray session
    assert not (tmp_path / "home" / ".ray").exists()


@pytest.mark.slow
def test_train_prints_only_its_own_output_and_leaves_nothing_behind(tmp_path: Path):
    result = train(
        tmp_path, "--run", "cli", "--steps", "512", "--workers", "1", "--envs", "1", "--batch", "256",
        "--minibatch", "64", "--num-epochs", "1", "--episode-length", "128", "--export-every-episodes", "0",
        "--planner", "rules", "--evaluation-every-env-steps", "256", "--evaluation-episodes", "2",
        "--evaluation-processes", "1", timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("\r[")  # the progress bar comes first
    assert "run cli: finished after" in result.stdout
    for steps in (256, 512):  # each evaluation on a line of its own, and in the run folder
        assert f"\nevaluation at {steps} steps ({steps} in all): " in result.stdout
    assert "won from power_on" in result.stdout
    assert "  last evaluation at 512 steps" in result.stdout
    work = re.search(r"emulator's work: (\d+) steps in all \(512 env steps \+ evaluation (\d+)",
                     result.stdout)  # fmt: skip
    assert work
    assert int(work[2]) > 0
    assert int(work[1]) >= 512 + int(work[2])
    logged = (tmp_path / "runs/cli/evaluation/evaluations.jsonl").read_text().splitlines()
    assert [json.loads(line)["env_steps"] for line in logged] == [256, 512]
    assert "learning curve:" in result.stdout
    home = tmp_path / "home"
    assert not (home / ".ray").exists()
    assert not (home / "ray_results").exists()
    [session] = (tmp_path / "runs" / "cli" / "ray").glob("session_2*")
    for _ in range(50):
        if not processes_mentioning(session.name):
            break
        time.sleep(0.2)
    assert not processes_mentioning(session.name)


@pytest.mark.slow
def test_a_killed_driver_leaves_no_ray_process(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    command = [KOHOLINT, "train", "--run", "killed", "--steps", "100000", "--workers", "1", "--envs", "1",
               "--store", str(tmp_path / "store"), "--run-dir", str(tmp_path / "runs")]  # fmt: skip
    driver = subprocess.Popen(
        command,
        env={**os.environ, "HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.read(2) == b"\r["  # training: Ray and its agents are up
        [session] = (tmp_path / "runs" / "killed" / "ray").glob("session_2*")
        assert processes_mentioning(session.name)
    finally:
        driver.kill()  # SIGKILL: no cleanup of its own
        driver.wait()
    for _ in range(100):
        if not processes_mentioning(session.name):
            break
        time.sleep(0.2)
    assert not processes_mentioning(session.name)


@pytest.mark.slow
def test_ctrl_c_stops_the_run_with_a_checkpoint_and_the_summary(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    command = [KOHOLINT, "train", "--run", "stopped", "--steps", "1000000", "--workers", "1",
               "--envs", "1", "--batch", "256", "--minibatch", "64", "--num-epochs", "1",
               "--checkpoint-every-iterations", "1000", "--export-every-episodes", "0",
               "--store", str(tmp_path / "store"), "--run-dir", str(tmp_path / "runs")]  # fmt: skip
    driver = subprocess.Popen(command, env={**os.environ, "HOME": str(home)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert driver.stdout is not None
        assert driver.stdout.read(2) == b"\r["  # training
        driver.send_signal(signal.SIGINT)
        out, err = driver.communicate(timeout=120)
    finally:
        driver.kill()
    text = out.decode()
    assert driver.returncode == 0, err.decode()
    assert "stopping after this iteration, with a checkpoint" in text
    assert "run stopped: stopped after" in text
    assert "Traceback" not in text + err.decode()
    checkpoints = [p for p in (tmp_path / "store" / "checkpoints" / "stopped").iterdir()
                   if p.name.isdigit()]  # fmt: skip
    assert len(checkpoints) == 1  # the stop's own: the first periodic one is 1,000 iterations away


def test_the_progress_line_shows_the_curriculum_and_its_later_starts_once_there_are_any():
    from types import SimpleNamespace

    from trainer.cli import _phase_progress

    position = {"start_step": 264, "demo_length": 1026, "success_rate": 0.05, "pass": 1}
    line = _phase_progress(SimpleNamespace(curriculum=position))
    assert line == "  start 264/1026  wins there 0.05"
    line = _phase_progress(SimpleNamespace(curriculum={**position, "later_success_rate": 0.25,
                                                       "pass": 2}))  # fmt: skip
    assert line == "  start 264/1026  wins there 0.05  later 0.25  pass 2"
