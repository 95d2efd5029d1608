"""Go-Explore levelled by an R_phi the judges fit on the explorer's own cells."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.libs.koholint.explore.test_levels import STD, raw_at, sword_reward_model

from koholint.cli import main
from koholint.env.encoding import OBSERVATION_SIZE, SLOT_INDEX, encoder_version, encoding_size
from koholint.env.export import read_segment
from koholint.explore import ExploreConfig, ExploreConfigError, Explorer
from koholint.explore.archive import Archive
from koholint.explore.levels import REWARD_LEVEL_OFFSET, LevelSpec, level_function
from koholint.reward.model import read_card
from koholint.store import LocalStore
from orchestrator.judged import CELLS_PER_SEGMENT, JudgedLevels


def observe(archive: Archive, cell: tuple, steps: int, state: bytes, visits: int = 1) -> str:
    for _ in range(visits):
        archive.observe(cell, steps, 0.0, lambda: state, trajectory=lambda: state * 2)
    return archive.cells[cell].state_id


def test_relevel_rekeys_cells_merges_collisions_and_moves_their_states():
    archive = Archive()
    slow = observe(archive, (("r",), 1, 1, 0), 30, b"slow", visits=3)
    fast = observe(archive, (("r",), 1, 1, 2), 10, b"fast")
    other = observe(archive, (("r",), 2, 1, 0), 20, b"other")
    renamed = archive.relevel({(("r",), 1, 1, 0): 5, (("r",), 1, 1, 2): 5, (("r",), 2, 1, 0): 1})
    assert set(archive.cells) == {(("r",), 1, 1, 5), (("r",), 2, 1, 1)}
    merged = archive.cells[(("r",), 1, 1, 5)]
    assert (merged.steps, merged.level, merged.visits) == (
        10,
        5,
        4,
    )  # the faster kept, counts added
    assert archive.state(merged) == b"fast"
    assert archive.trajectory(merged) == b"fastfast"
    assert renamed[fast] == (merged.state_id, True)
    assert renamed[slow] == (merged.state_id, False)
    assert renamed[other][1]
    assert archive.state(archive.cells[(("r",), 2, 1, 1)]) == b"other"
    assert archive.top_level == 5
    # a cell found after the merge gets a found order of its own, and its own state id
    observe(archive, (("r",), 1, 1, 0), 5, b"new")
    assert archive.state(archive.cells[(("r",), 1, 1, 0)]) == b"new"
    assert archive.cells[(("r",), 1, 1, 0)].found_order == 3
    assert archive.state(merged) == b"fast"


def cell_observation(has_sword: float, link_x: float) -> bytes:
    vector = np.zeros(OBSERVATION_SIZE, np.float32)
    vector[SLOT_INDEX["has_sword"]], vector[SLOT_INDEX["link_x"]] = has_sword, link_x
    return vector.tobytes()


def test_a_published_version_levels_every_cell_ratcheted_along_its_parents(tmp_path: Path):
    store = LocalStore(tmp_path)
    version = sword_reward_model(store)  # R_phi = 2 * has_sword + 0.5 * link_x (mean 0.25, std 0.5)
    spec = LevelSpec("judges", store=str(tmp_path), level_step=1.0, encoding="observation",
                     level_bins=0)  # fmt: skip
    judged = JudgedLevels(spec, run="r", logs=tmp_path / "logs")
    archive = Archive()
    start = observe(archive, (("r",), 0, 0, 0), 0, b"start")
    sword = observe(archive, (("r",), 1, 0, 0), 5, b"sword")
    walked = observe(archive, (("r",), 2, 0, 0), 9, b"walked")  # reached from the sword's cell
    judged.add(start, cell_observation(0, 0), {"room": 1}, "")
    judged.add(sword, cell_observation(1, 0), {"room": 2}, start)
    judged.add(walked, cell_observation(0, 0), {"room": 3}, sword)

    judged._relevel(archive, version)

    def expected(value: float) -> int:  # standardised, then floored in steps of 1 std
        return int(np.floor((value - 0.25) / STD)) + REWARD_LEVEL_OFFSET

    levels = {cell[1]: cell[3] for cell in archive.cells}
    assert levels == {0: expected(0.0), 1: expected(2.0), 2: expected(2.0)}  # ratcheted
    assert archive.top_level == expected(2.0)
    assert judged.current.level == "reward-model"
    assert judged.current.reward_model == version
    ids = {record.cell[1]: record.state_id for record in archive.cells.values()}
    assert set(judged.facts) == set(ids.values())  # the facts follow the renamed cells
    assert judged.facts[ids[2]].parent == ids[1]
    assert judged.facts[ids[1]].parent == ids[0]


def test_level_bins_cut_r_phi_into_equal_shares_of_the_archive(tmp_path: Path):
    store = LocalStore(tmp_path)
    version = sword_reward_model(store)  # R_phi = 2 * has_sword + 0.5 * link_x
    spec = LevelSpec("judges", store=str(tmp_path), level_bins=2, encoding="observation")
    judged = JudgedLevels(spec, run="r", logs=tmp_path / "logs")
    archive = Archive()
    for index, (sword, x) in enumerate([(0, 0.0), (0, 0.5), (1, 0.0), (1, 0.5)]):
        state_id = observe(archive, (("r",), index, 0, 0), index, b"s")
        judged.add(state_id, cell_observation(sword, x), {"room": index}, "")

    judged._relevel(archive, version)

    assert {cell[1]: cell[3] for cell in archive.cells} == {0: 0, 1: 0, 2: 1, 3: 1}
    (threshold,) = judged.current.thresholds  # between R_phi 0.25 and 2 (standardised)
    assert (0.25 - 0.25) / STD < threshold < (2.0 - 0.25) / STD
    judged.current.validate()  # what the workers get levels new states the same way
    env, holding_the_sword = raw_at("dungeon_entrance")
    assert level_function(judged.current)(holding_the_sword) == 1
    env.close()


def test_cells_are_exported_as_segments_the_evaluator_reads(tmp_path: Path):
    store = LocalStore(tmp_path)
    spec = LevelSpec("judges", store=str(tmp_path), encoding="observation")
    judged = JudgedLevels(spec, run="r", logs=tmp_path)
    archive = Archive()
    state = {"room": {"indoor": False, "map": 0, "room": 1}}
    for index in range(CELLS_PER_SEGMENT + 3):
        state_id = observe(archive, (("r",), index, 0, 0), index, b"s")
        judged.add(state_id, cell_observation(0, index / 100), state, "")
    assert judged._export(archive, 1) == CELLS_PER_SEGMENT + 3
    assert not judged.pending
    first, second = (read_segment(store, f"episodes/r/cells-001/{i:05d}") for i in (0, 1))
    assert (len(first.steps), len(second.steps)) == (CELLS_PER_SEGMENT, 3)
    xs = sorted(step["observation"][SLOT_INDEX["link_x"]] for step in first.steps + second.steps)
    assert xs == pytest.approx([index / 100 for index in range(CELLS_PER_SEGMENT + 3)])
    assert judged._export(archive, 2) == 0  # nothing new
    # two new cells go out with two of the earlier ones, in a shuffled order
    for index in (50, 51):
        state_id = observe(archive, (("r",), index, 0, 0), index, b"s")
        judged.add(state_id, cell_observation(0, index / 100), state, "")
    assert judged._export(archive, 3) == 2
    steps = read_segment(store, "episodes/r/cells-003/00000").steps
    xs = [step["observation"][SLOT_INDEX["link_x"]] for step in steps]
    rounded = sorted(np.round(xs, 4).tolist())
    assert len(rounded) == 4
    assert rounded[2:] == [0.5, 0.51]
    assert rounded[1] < 0.35


def test_judges_level_settings_name_the_fix():
    with pytest.raises(ExploreConfigError, match="needs --store URL"):
        ExploreConfig(level=LevelSpec("judges")).validate()
    with pytest.raises(ExploreConfigError, match="refit_every=10"):
        ExploreConfig(level=LevelSpec("judges", store="x", refit_every=10)).validate()
    with pytest.raises(ExploreConfigError, match="judges 'llm'"):
        ExploreConfig(level=LevelSpec("judges", store="x", judges="llm")).validate()
    with pytest.raises(ExploreConfigError, match="noisy_accuracy=1.5"):
        ExploreConfig(level=LevelSpec("judges", store="x", noisy_accuracy=1.5)).validate()
    with pytest.raises(ExploreConfigError, match="encoding 'pixels': use one of observation"):
        ExploreConfig(level=LevelSpec("judges", store="x", encoding="pixels")).validate()
    with pytest.raises(ExploreConfigError, match="level_bins=1: use 0"):
        ExploreConfig(level=LevelSpec("judges", store="x", level_bins=1)).validate()
    with pytest.raises(ExploreConfigError, match="question 'rooms': use one of"):
        ExploreConfig(level=LevelSpec("judges", store="x", question="rooms")).validate()


def test_memory_encoded_cells_go_out_under_their_own_encoder(tmp_path: Path):
    store = LocalStore(tmp_path)
    spec = LevelSpec("judges", store=str(tmp_path), encoding="memory")
    judged = JudgedLevels(spec, run="r", logs=tmp_path)
    archive = Archive()
    state_id = observe(archive, (("r",), 0, 0, 0), 0, b"s")
    with pytest.raises(ValueError, match="128 floats, not 144"):
        judged.add(state_id, cell_observation(1, 0), {}, "")  # the policy's encoding
    vector = np.zeros(encoding_size("memory"), np.float32)
    vector[-1] = 0.25
    judged.add(state_id, vector.tobytes(), {"room": {"indoor": False, "map": 0, "room": 1}}, "")
    assert judged._export(archive, 1) == 1
    segment = read_segment(store, "episodes/r/cells-001/00000")
    assert segment.manifest["encoder_version"] == encoder_version("memory")
    assert segment.steps[0]["observation"][-1] == 0.25


@pytest.mark.parametrize("question", ["progress+rooms", "progress"])
def test_the_judges_are_asked_the_specs_question(tmp_path: Path, question: str):
    spec = LevelSpec("judges", store=str(tmp_path), judges="noisy", question=question)
    command = JudgedLevels(spec, run="r", logs=tmp_path)._evaluate_command()
    asked = command[command.index("--state-question") + 1]
    assert (asked, command[command.index("--backend") + 1]) == (question, "noisy")


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["observation", "memory"])
def test_the_judges_fit_r_phi_on_the_explorers_cells_and_it_levels_the_archive(
    tmp_path: Path, encoding: str
):
    """Real rounds: the cells exported, `koholint evaluate` (rules judges) and
    `koholint train-reward-model` as subprocesses, the archive re-levelled by the version."""
    out, store = tmp_path / "out", tmp_path / "store"
    code = main(["explore", "--level", "judges", "--store", str(store), "--refit-every", "1500",
                 "--workers", "1", "--seed", "3", "--max-env-steps", "4000", "--quiet",
                 "--out", str(out), "--level-encoding", encoding,
                 "--judges-question", "progress+rooms"])  # fmt: skip
    assert code == 1  # no win in 4,000 steps
    summary = json.loads((out / "summary.json").read_text())
    refits = summary["refits"]
    steps = [refit["step"] for refit in refits]  # at the first batch's end past each 1,500
    assert len(steps) == 2, steps
    assert 1500 <= steps[0] < 2300, steps
    assert 3000 <= steps[1] < 3800, steps
    published = [refit for refit in refits if refit["state"] == "published"]
    assert published, refits
    assert all(refit["pairs"] >= 20 and refit["accuracy"] > 0.6 for refit in published)
    assert summary["top_level"] > 0  # R_phi levels, not the none level's 0
    assert summary["level_encoding"] == encoding
    card = read_card(LocalStore(store), published[-1]["version"])
    assert card.encoder_version == encoder_version(encoding)  # R_phi read what was asked
    logs = sorted(path.name for path in (out / "judged").iterdir())
    assert "judged-001-evaluate.log" in logs
    assert "judged-001-reward-model.log" in logs
    runs = {key.split("/")[1] for key in LocalStore(store).list("scores/")}
    assert len(runs) == 1
    assert runs.pop().startswith("explore-s3-")


@pytest.mark.slow
def test_on_its_defaults_the_judges_order_levels_and_r_phi_learns_their_ties(tmp_path: Path):
    """The default judged level: the judges asked for the progress level alone, so the rounds
    before the first puzzle (seed 0: at 4,791 steps) decide no pair and publish nothing; the
    next round's version is fitted on the judges' orders and their ties."""
    out, store = tmp_path / "out", tmp_path / "store"
    code = main(["explore", "--level", "judges", "--store", str(store), "--refit-every", "2500",
                 "--workers", "1", "--seed", "0", "--max-env-steps", "10100", "--quiet",
                 "--out", str(out)])  # fmt: skip
    assert code == 1
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["judges_question"], summary["judges_tie_weight"]) == ("progress", 1.0)
    refits = summary["refits"]
    assert refits[0]["state"] == "refused", refits  # every cell at level 0: all ties
    published = [refit for refit in refits if refit["state"] == "published"]
    assert published, refits
    log = (out / "judged" / f"judged-{published[0]['round']:03d}-reward-model.log").read_text()
    assert "tie pairs" in log
    assert summary["top_level"] > 0


@pytest.mark.slow
def test_a_pool_of_workers_levels_new_states_with_each_published_version(tmp_path: Path):
    store = tmp_path / "store"
    config = ExploreConfig(seed=4, workers=2, max_env_steps=8000, logs_dir=str(tmp_path / "logs"),
                           level=LevelSpec("judges", store=str(store), refit_every=1500,
                                           question="progress+rooms"))  # fmt: skip
    explorer = Explorer(config)
    result = explorer.run()
    assert any(refit.state == "published" for refit in result.refits), result.refits
    assert explorer.level_spec.level == "reward-model"
    assert result.archive.top_level > 0
