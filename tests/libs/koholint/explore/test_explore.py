"""Go-Explore phase 1 on the real cartridge: cells, runs, the loop, and a win that replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from koholint.env.zelda import Action
from koholint.explore import ExploreConfig, ExploreConfigError, Explorer
from koholint.explore.archive import Archive
from koholint.explore.cells import NO_BLOCK, cell_of, room_detail
from koholint.explore.runner import Found, Runner, RunReport, RunTask, exploration_env
from koholint.explore.trajectory import winning_demo, write_trajectory
from koholint.trajectory.jsonl import ram_hash, replay

VILLAGE = (0, 0, 0x21)


def env_at(start: str):
    """A plain ZeldaEnv as phase 1 configures it, reset at a named state."""
    env = exploration_env(start_state=start, planner=False)
    env.reset(seed=0)
    return env


def replayed_hash(actions: bytes) -> str:
    """The RAM hash after replaying `actions` from start_of_play under hybrid control."""
    env = exploration_env(start_state="start_of_play")
    env.reset(seed=0)
    for action in actions:
        env.step(action)
    digest = ram_hash(env.unwrapped)
    env.close()
    return digest


def restored_hash(state: bytes) -> str:
    env = exploration_env(start_state=state)
    env.reset(seed=0)
    digest = ram_hash(env.unwrapped)
    env.close()
    return digest


def test_cells_see_the_rooms_own_progress():
    """The key hall's enemies and the puzzle's block are part of the cell (the tests may use
    the recorded states; exploration itself never does)."""
    village = env_at("start_of_play")
    cell, level = cell_of(village.raw_state, 16)
    assert cell[:4] == (VILLAGE, village.raw_state.x // 16, village.raw_state.y // 16, 0)
    assert level == 0
    assert room_detail(village.raw_state) == (0, NO_BLOCK)
    puzzle = env_at("before_puzzle")
    for _ in range(20):
        puzzle.step(Action.UP)  # from the crossroads into the puzzle room
    enemies, block = room_detail(puzzle.raw_state)
    assert puzzle.raw_state.room_key == (0, 0, 0x01)
    assert (enemies, block) == (0, 0x23)  # the block at tile (3, 2), unpushed
    for env in (village, puzzle):
        env.close()


def test_cells_keep_apart_what_link_holds_whatever_the_level():
    """A state with the sword is another cell than the same place without it, even when the
    level does not count the sword (none, or an R_phi that has not seen it yet)."""
    env = env_at("before_puzzle")  # Link holds the sword here
    raw = env.raw_state
    env.close()
    sword = raw.items_mask
    assert sword & (1 << 1)  # item 1: the sword
    with_sword, _ = cell_of(raw, 16, level_of=lambda _: 0)
    raw.inventory, raw.keys = (0, 0), 1
    without, _ = cell_of(raw, 16, level_of=lambda _: 0)
    assert with_sword[:6] == without[:6]
    assert (with_sword[6:], without[6:]) == ((sword, 0), (0, 1))


def test_a_run_reports_new_cells_whose_states_match_their_actions():
    start = env_at("start_of_play")
    state = start.gameboy.save_state()
    start.close()
    runner = Runner(frame_skip=4, tile_bin=16, run_steps=60, repeat_probability=0.9)
    known: dict = {}
    report = runner.run(RunTask(state, 0, seed=3), known)
    assert len(report.actions) == 60
    assert report.found
    assert [found.length for found in report.found] == sorted(f.length for f in report.found)
    assert all(known[found.cell] == (0.0, found.length) for found in report.found)
    for found in (report.found[0], report.found[-1]):
        assert restored_hash(found.state) == replayed_hash(report.actions[: found.length])
    again = runner.run(RunTask(state, 0, seed=3), known)  # same seed: nothing new or faster
    assert again.actions == report.actions
    assert again.found == []
    runner.close()


def test_the_loop_grows_an_archive_of_replayable_cells():
    explorer = Explorer(ExploreConfig(seed=1, max_env_steps=3_000, run_steps=50))
    result = explorer.run()
    assert not result.won
    assert 2_500 < result.env_steps <= 3_000
    archive = result.archive
    assert result.cells == len(archive) > 20
    rooms = {cell[0] for cell in archive.cells}
    assert len(rooms) >= 2  # left the village
    deepest = max(archive.cells.values(), key=lambda record: record.steps)
    trajectory = archive.trajectory(deepest)
    assert len(trajectory) == deepest.steps > 50  # built from more than one run
    assert restored_hash(archive.state(deepest)) == replayed_hash(trajectory)


def test_a_stall_lasts_while_the_best_level_gains_no_cell():
    """Batches merged by hand (the runs' logic alone): a stall begins once the best level
    has gained no cell for stall_env_steps, a cell found below it does not end it, and a
    new cell at the best level does."""
    config = ExploreConfig(seed=0, run_steps=50, runs_per_batch=2, stall_env_steps=300)
    archive = Archive(level_base=1000.0)
    archive.observe((VILLAGE, 0, 0, 0, 1), 0, 0.0, lambda: b"start", level=1,
                    trajectory=lambda: b"")  # fmt: skip
    explorer = Explorer(config, archive=archive)

    def merge(*cells: tuple[tuple, int]) -> None:
        batch = explorer._next_batch()
        found = [Found(cell, level, 10, b"state") for cell, level in cells]
        reports = [RunReport(bytes(50), found)] + [RunReport(bytes(50))] * (len(batch.tasks) - 1)
        explorer._merge(batch, reports)

    merge(((VILLAGE, 1, 0, 0, 1), 1))  # 100 steps: the best level grows
    merge()
    merge()
    assert explorer.stalls == []  # 200 steps without growth
    merge()
    assert explorer.stalls == [(400, None)]
    merge(((VILLAGE, 2, 0, 0, 0), 0))  # a cell below the best level: still stalled
    assert explorer.stalls == [(400, None)]
    merge(((VILLAGE, 3, 0, 0, 1), 1))
    assert explorer.stalls == [(400, 600)]
    assert not explorer._stalled()


@pytest.mark.slow  # starting two worker processes takes ~10-20 s on a busy 2-core machine
def test_workers_share_one_archive_and_a_seed_reproduces():
    config = ExploreConfig(seed=2, max_env_steps=2_400, run_steps=50, workers=2, runs_per_batch=4)
    result = Explorer(config).run()
    assert 2_000 < result.env_steps <= 2_400
    assert result.cells > 20
    again = Explorer(config).run()  # batches merged in the order they were sent
    assert again.archive.cells.keys() == result.archive.cells.keys()
    assert [again.archive.trajectory(r) for r in again.archive.cells.values()] == [
        result.archive.trajectory(r) for r in result.archive.cells.values()
    ]


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("start_state", "last_room", "not the system's own finds"),
        ("workers", 0, "workers=0"),
        ("repeat_probability", 1.0, "repeat_probability"),
        ("level_base", 0.5, "level_base"),
        ("stall_level_base", 0.5, "stall_level_base"),
        ("stall_env_steps", -1, "stall_env_steps"),
    ],
)
def test_bad_settings_name_the_fix(setting, value, message):
    with pytest.raises(ExploreConfigError, match=message):
        ExploreConfig(**{setting: value}).validate()


@pytest.mark.slow
def test_phase_one_wins_and_the_trajectory_replays_to_the_credits(tmp_path: Path):
    """From start_of_play with nothing but the system's own finds: a win within 400k env
    steps (seed 1: BENCHMARKS.md#claim-explore-worlds), kept as actions
    that replay, RAM hash for RAM hash, to the credits."""
    result = Explorer(ExploreConfig(seed=1, max_env_steps=400_000, prefer_health=False)).run()
    assert result.won
    assert result.milestones["instrument"] is not None
    assert all(result.milestones[name] is not None for name in ("sword", "puzzle", "key"))
    check = write_trajectory(result.trajectory, tmp_path / "win.jsonl")
    assert check.won  # the last action takes the instrument, none before it does
    assert check.steps == len(result.trajectory)
    assert all(check.milestones.values())
    replayed = replay(tmp_path / "win.jsonl")
    assert replayed.ok
    assert replayed.steps == len(result.trajectory)
    demo = winning_demo(result.trajectory, every=64)  # planner takeovers and all
    assert demo[0].step == 0
    assert demo[-1].step > len(result.trajectory) - 2 * 64


def test_prefer_health_keeps_the_hearts_of_each_saved_state():
    start = env_at("start_of_play")
    state = start.gameboy.save_state()
    start.close()
    runner = Runner(
        frame_skip=4, tile_bin=16, run_steps=40, repeat_probability=0.9, prefer_health=True
    )
    report = runner.run(RunTask(state, 0, seed=3), {})
    runner.close()
    assert report.found
    assert {found.score for found in report.found} == {3.0}  # three full hearts at the start
