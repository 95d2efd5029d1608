"""`koholint train --phase both` on a world nobody has seen: a small generated world, from
nothing, end to end — phase 1 wins it from its own start of play, the shortening, the
teachers and DAgger on its rooms, phase 2 and an evaluation from power-on through its file
select and name entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import koholint

from koholint.game.rom import read_rom

WORLD_SEED = 5  # a tuning world: phase 1 wins it in ~278k env steps on one worker


@pytest.mark.slow  # ~5 minutes on 2 cores: phase 1 to a win, the warm start, a short phase 2
@pytest.mark.timeout(1500)
def test_the_one_command_trains_on_a_generated_world_from_power_on(tmp_path: Path):
    world = tmp_path / f"small-{WORLD_SEED}"
    made = koholint("cartridge", "generate", "--seed", str(WORLD_SEED), "--size", "small",
                    "--out", str(world))  # fmt: skip
    assert made.returncode == 0, made.stderr
    runs = tmp_path / "runs"
    trained = koholint(
        "train", "--phase", "both", "--rom", str(world), "--run", "island", "--run-dir", str(runs),
        "--store", str(tmp_path / "store"), "--total-env-steps", "312000", "--num-env-runners", "1",
        "--envs-per-env-runner", "2", "--explore-max-env-steps", "300000",
        "--explore-shorten-env-steps", "20000", "--evaluation-every-env-steps", "2048",
        "--evaluation-episodes", "2", "--evaluation-processes", "1",
        "--evaluation-report-episodes", "2", timeout=1400,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    assert "run island: finished" in trained.stdout
    run = runs / "island"
    explored = json.loads((run / "explore.json").read_text())
    assert explored["won"]
    assert all(explored["milestones"].values()), explored["milestones"]  # this world's rooms
    header = json.loads((run / "win.jsonl").read_text().splitlines()[0])
    assert header["rom_sha256"] == read_rom(world / "cartridge.gb").sha256  # its world, played
    warm = json.loads((run / "warm_start.json").read_text())
    assert warm["walks_clean"] > 0
    assert warm["env_steps"] > warm["demo_steps"]  # the teachers' work, counted
    evaluations = [json.loads(line) for line in
                   (run / "evaluation" / "evaluations.jsonl").read_text().splitlines()]  # fmt: skip
    assert evaluations
    assert evaluations[0]["start"] == "power_on"
    assert evaluations[0]["episodes"] == 2
