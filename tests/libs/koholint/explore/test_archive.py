"""The Go-Explore archive: best state per cell, weighted restarts, persistence, and real restarts."""

from pathlib import Path

import numpy as np
import pytest

from koholint.env.zelda import Action, ZeldaEnv
from koholint.explore.archive import Archive
from koholint.store import LocalStore

VILLAGE = (0, 0, 0x21)


def test_keeps_the_fastest_then_richest_state():
    archive = Archive()
    assert archive.observe((VILLAGE, 1, 1, 0), 50, 1.0, lambda: b"slow")
    assert not archive.observe((VILLAGE, 1, 1, 0), 60, 9.0, lambda: b"slower")
    assert archive.observe((VILLAGE, 1, 1, 0), 40, 0.5, lambda: b"faster")
    assert archive.observe((VILLAGE, 1, 1, 0), 40, 2.0, lambda: b"richer")
    record = archive.cells[(VILLAGE, 1, 1, 0)]
    assert archive.state(record) == b"richer"
    assert record.visits == 4


def test_the_state_is_taken_only_when_kept():
    archive = Archive()
    archive.observe((VILLAGE, 0, 0, 0), 5, 0.0, lambda: b"s")
    archive.observe(
        (VILLAGE, 0, 0, 0), 9, 0.0, lambda: pytest.fail("state taken for a worse visit")
    )


def test_selection_favours_rarely_chosen_and_new_cells():
    archive = Archive()
    for x in range(10):  # found in order: (VILLAGE, 9, 0, 0) is the newest
        archive.observe((VILLAGE, x, 0, 0), x + 1, 0.0, lambda: b"s")
    archive.cells[(VILLAGE, 1, 0, 0)].chosen = 100
    newest, oldest, worn = (archive.cells[(VILLAGE, x, 0, 0)] for x in (9, 0, 1))
    assert newest.weight(10) == pytest.approx(1 + 0.5 / 2**0.5 + 2.0)
    assert oldest.weight(10) == pytest.approx(1 + 0.5 / 2**0.5 + 0.2)
    assert worn.weight(10) < 0.6 * oldest.weight(10)  # chosen 100 times
    picks = [archive.select(np.random.default_rng(seed)).cell for seed in range(300)]
    assert picks.count(newest.cell) > 1.5 * picks.count(oldest.cell)
    assert newest.chosen == picks.count(newest.cell)


def test_empty_archive_cannot_select():
    with pytest.raises(LookupError, match="empty"):
        Archive().select(np.random.default_rng(0))


def test_persists_and_resumes(tmp_path: Path):
    store = LocalStore(tmp_path)
    archive = Archive(store=store, prefix="archives/run-1")
    archive.observe((VILLAGE, 1, 2, 0), 3, 1.5, lambda: b"state-a")
    archive.observe(((1, 0, 0x10), 4, 4, 2), 900, 7.0, lambda: b"state-b")
    archive.select(np.random.default_rng(1))
    archive.save()
    resumed = Archive.load(store, "archives/run-1")
    assert resumed.cells.keys() == archive.cells.keys()
    record = resumed.cells[((1, 0, 0x10), 4, 4, 2)]
    assert record.steps == 900
    assert resumed.state(record) == b"state-b"
    assert sum(r.chosen for r in resumed.cells.values()) == 1
    assert len(Archive.load(store, "archives/none")) == 0


def test_env_restarts_from_an_archived_cell():
    """Explore, archive cells with real save states, and start an episode from the frontier."""
    env = ZeldaEnv()
    archive = Archive()
    env.reset(seed=0)
    for step in range(1, 40):  # into the crossroads, stopping mid-room
        _, _, _, _, info = env.step(Action.UP)
        archive.observe((*info["cell"], 0), step, 0.0, env.gameboy.save_state)
    assert info["room_key"] == (0, 0, 0x11)
    frontier = max(archive.cells.values(), key=lambda record: record.found_order)
    env.reset(options={"start_state": archive.state(frontier)})
    _, _, _, _, info = env.step(Action.NOOP)
    env.close()
    assert info["room_key"] == frontier.cell[0]


def test_an_archive_of_an_older_trainer_names_the_fix(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("archives/old/index.json", b'{"schema_version": 2, "cells": []}')
    with pytest.raises(ValueError, match="another name, or delete archives/old/"):
        Archive.load(store, "archives/old")


def test_a_higher_level_beats_fewer_steps():
    """Phase 1 may keep one cell for several levels: the level decides, then the steps."""
    archive = Archive()
    cell = (VILLAGE, 1, 1, 0)
    assert archive.observe(cell, 50, 0.0, lambda: b"level-1", level=1)
    assert not archive.observe(cell, 10, 0.0, lambda: b"level-0 faster", level=0)
    assert archive.observe(cell, 80, 0.0, lambda: b"level-2 slower", level=2)
    assert archive.state(archive.cells[cell]) == b"level-2 slower"
    assert archive.cells[cell].level == 2
    assert archive.top_level == 2


def test_selection_crowds_the_highest_level():
    archive = Archive(level_base=10.0)
    for x in range(20):
        archive.observe((VILLAGE, x, 0, 0), x + 1, 0.0, lambda: b"s")
    archive.observe((VILLAGE, 0, 1, 1), 30, 0.0, lambda: b"s")  # the one cell with the sword
    top = archive.cells[(VILLAGE, 0, 1, 1)]
    low = archive.cells[(VILLAGE, 19, 0, 0)]
    assert top.weight(21, 1, 10.0) == pytest.approx(10 * low.weight(21, 1, 10.0), rel=0.2)
    picks = [archive.select(np.random.default_rng(seed)).cell for seed in range(400)]
    assert picks.count(top.cell) > 0.25 * len(picks)  # 1 cell of 21, a third of the restarts
    with pytest.raises(ValueError, match="level_base"):
        Archive(level_base=0.5)


def test_a_level_base_of_one_weighs_every_level_alike():
    archive = Archive(level_base=1000.0)
    for x in range(20):
        archive.observe((VILLAGE, x, 0, 0), x + 1, 0.0, lambda: b"s")
    archive.observe((VILLAGE, 0, 1, 2), 30, 0.0, lambda: b"s")  # a puzzle out of order
    top = (VILLAGE, 0, 1, 2)
    focused = [archive.select(np.random.default_rng(seed)).cell for seed in range(200)]
    spread = [archive.select(np.random.default_rng(seed), 1.0).cell for seed in range(200)]
    assert focused.count(top) == 200  # level 0 weighs a millionth as much
    assert spread.count(top) < 60  # 1 cell of 21, the newest: more than 1/21, far from all
    assert len(set(spread)) > 15


def test_a_higher_count_power_spreads_restarts_from_worn_cells():
    archive = Archive(count_power=1.0)
    archive.observe((VILLAGE, 0, 0, 0), 1, 0.0, lambda: b"s")
    worn = archive.cells[(VILLAGE, 0, 0, 0)]
    worn.chosen, worn.visits = 3, 3
    assert worn.weight(1, 0, 3.0, 1.0) == pytest.approx(1 / 4 + 0.5 / 4 + 2.0)
    assert worn.weight(1, 0, 3.0, 0.5) == pytest.approx(1 / 2 + 0.5 / 2 + 2.0)
    with pytest.raises(ValueError, match="count_power"):
        Archive(count_power=0)


def test_trajectories_are_kept_with_their_states_and_persist(tmp_path: Path):
    store = LocalStore(tmp_path)
    archive = Archive(store=store, prefix="archives/explore")
    cell = (VILLAGE, 2, 3, 0, 1, 255)  # phase 1's longer cells persist too
    archive.observe(cell, 3, 0.0, lambda: b"s", trajectory=lambda: bytes([1, 1, 4]))
    archive.save()
    resumed = Archive.load(store, "archives/explore")
    record = resumed.cells[cell]
    assert resumed.trajectory(record) == bytes([1, 1, 4])
    assert resumed.top_level == 0
    archive.observe(cell, 2, 0.0, lambda: b"t")  # improved without a trajectory: none is kept
    with pytest.raises(LookupError, match="no trajectory"):
        Archive().trajectory(record)


def test_a_higher_score_beats_fewer_steps_within_a_level():
    archive = Archive()
    cell = (VILLAGE, 1, 1, 0)
    archive.observe(cell, 10, 0.0, lambda: b"fast, half a heart", score=0)
    assert archive.observe(cell, 50, 0.0, lambda: b"slow, three hearts", score=3)
    assert not archive.observe(cell, 5, 0.0, lambda: b"faster, one heart", score=1)
    assert archive.state(archive.cells[cell]) == b"slow, three hearts"
    assert archive.best_known() == {cell: (3, 50)}
