"""Phase 1's levels: the hand-written progress level, none, and the judges' R_phi quantised."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from koholint.cli import main
from koholint.env.encoding import (
    SLOT_INDEX,
    encode,
    encode_with_memory,
    encoder_version,
    encoding_size,
)
from koholint.env.zelda import progress_level
from koholint.explore import ExploreConfig, ExploreConfigError, Explorer
from koholint.explore.levels import ITEM_LEVELS, REWARD_LEVEL_OFFSET, LevelSpec, level_function
from koholint.explore.runner import Runner, RunTask, exploration_env
from koholint.game.worldgen import SIZES
from koholint.reward.model import (
    RewardFunction,
    RewardModelError,
    new_version,
    publish,
    weights_bytes,
)
from koholint.schemas.reward_model import RewardModelCard
from koholint.store import LocalStore

MEAN, STD = 0.25, 0.5


def sword_reward_model(
    store: LocalStore, bias: float = 0.0, encoding: str = "observation", encoder: str = ""
) -> str:
    """R_phi = 2 * has_sword + 0.5 * link_x + bias: linear in two observation slots (one hidden
    unit kept above 0, where its ReLU is the identity); `encoder` overrides the card's."""
    size = encoding_size(encoding)
    weight = np.zeros((size, 1), np.float32)
    weight[SLOT_INDEX["has_sword"], 0] = 2.0
    weight[SLOT_INDEX["link_x"], 0] = 0.5
    layers = ((weight, np.array([10.0], np.float32)),
              (np.ones((1, 1), np.float32), np.array([bias - 10.0], np.float32)))  # fmt: skip
    function = RewardFunction(layers, MEAN, STD)
    card = RewardModelCard(
        version=new_version(), created_at=1.0,
        encoder_version=encoder or encoder_version(encoding), observation_size=size, hidden_sizes=[1], output_mean=MEAN, output_std=STD,
        pairs=10, heldout_pairs=3, heldout_accuracy=0.9, segments=6, epochs=5, seed=0,
        weights_sha256=hashlib.sha256(weights_bytes(function)).hexdigest(),
    )  # fmt: skip
    publish(store, card, function)
    return card.version


def raw_at(start: str):
    env = exploration_env(start_state=start, planner=False)
    env.reset(seed=0)
    return env, env.unwrapped.raw_state


def test_the_hand_written_level_ranks_an_item_above_every_puzzle_and_none_is_zero():
    env, raw = raw_at("dungeon_entrance")  # the sword and the puzzle: progress level 2
    assert (
        level_function(LevelSpec("progress"))(raw)
        == ITEM_LEVELS + 1
        == progress_level(raw, item_levels=ITEM_LEVELS)
    )
    assert level_function(LevelSpec("none"))(raw) == 0
    env.close()
    assert max(size.puzzles for size in SIZES.values()) < ITEM_LEVELS  # the sword outranks them


def test_the_reward_model_level_is_r_phi_standardised_and_cut_into_steps(tmp_path: Path):
    store = LocalStore(tmp_path)
    version = sword_reward_model(store)
    level = level_function(LevelSpec("reward-model", version, str(tmp_path), level_step=0.25))
    for start, has_sword in (("start_of_play", 0.0), ("dungeon_entrance", 1.0)):
        env, raw = raw_at(start)
        observation = encode(raw)
        assert observation[SLOT_INDEX["has_sword"]] == has_sword
        value = 2.0 * has_sword + 0.5 * float(observation[SLOT_INDEX["link_x"]])
        expected = math.floor((value - MEAN) / STD / 0.25) + REWARD_LEVEL_OFFSET
        assert level(raw) == expected
        env.close()
    assert level(raw_at("dungeon_entrance")[1]) - level(raw_at("start_of_play")[1]) >= 16
    floor = level_function(LevelSpec("reward-model", sword_reward_model(store, bias=-100.0),
                                     str(tmp_path)))  # fmt: skip
    assert floor(raw_at("dungeon_entrance")[1]) == 0  # far below the mean: level 0, not < 0


def test_a_version_is_read_in_the_encoding_its_card_names(tmp_path: Path):
    store = LocalStore(tmp_path)
    memory = sword_reward_model(store, encoding="memory")
    env, raw = raw_at("dungeon_entrance")
    spec = LevelSpec("reward-model", memory, str(tmp_path), level_step=0.25)  # default encoding
    observation = encode_with_memory(raw)
    value = 2.0 + 0.5 * float(observation[SLOT_INDEX["link_x"]])
    assert level_function(spec)(raw) == math.floor((value - MEAN) / STD / 0.25) + 8
    env.close()
    alien = sword_reward_model(store, encoder="obs128-000000000000")
    with pytest.raises(RewardModelError, match="which this env does not encode"):
        level_function(LevelSpec("reward-model", alien, str(tmp_path)))


def test_an_archive_leveled_by_r_phi_or_by_nothing(tmp_path: Path):
    store = LocalStore(tmp_path)
    version = sword_reward_model(store)
    spec = LevelSpec("reward-model", version, str(tmp_path))
    level = level_function(spec)
    result = Explorer(ExploreConfig(seed=1, max_env_steps=1_500, run_steps=50, level=spec)).run()
    levels = {cell[3] for cell in result.archive.cells}
    assert len(levels) >= 2  # Link's x moves R_phi across steps of half a std
    assert result.archive.top_level == max(levels)
    for record in result.archive.cells.values():  # the best its trajectory reached
        env = exploration_env(start_state=result.archive.state(record), planner=False)
        env.reset(seed=0)
        assert record.level >= level(env.unwrapped.raw_state)
        env.close()
    flat = Explorer(ExploreConfig(seed=1, max_env_steps=1_500, run_steps=50,
                                  level=LevelSpec("none"))).run()  # fmt: skip
    assert {cell[3] for cell in flat.archive.cells} == {0}
    assert flat.archive.top_level == 0


def test_a_run_keeps_the_best_r_phi_level_its_trajectory_reached(tmp_path: Path):
    spec = LevelSpec("reward-model", sword_reward_model(LocalStore(tmp_path)), str(tmp_path),
                     level_step=0.05)  # fmt: skip
    level = level_function(spec)
    env, _ = raw_at("start_of_play")
    state = env.unwrapped.gameboy.save_state()
    env.close()
    found = {}
    for ratchet in (True, False):
        runner = Runner(frame_skip=4, tile_bin=16, run_steps=400, repeat_probability=0.9,
                        planner=False, level_of=level, ratchet=ratchet)  # fmt: skip
        report = runner.run(RunTask(state, 0, seed=5, level=3), {})
        found[ratchet] = [item.level for item in report.found]
        runner.close()
    assert found[True] == [max(found[True][: i + 1]) for i in range(len(found[True]))]
    assert min(found[True]) >= 3  # never below the cell the run started from
    assert found[False] != sorted(found[False])  # Link walked left: R_phi fell, unratcheted


def test_bad_level_settings_name_the_fix(tmp_path: Path, capsys):
    with pytest.raises(ExploreConfigError, match="needs --reward-model VERSION"):
        ExploreConfig(level=LevelSpec("reward-model")).validate()
    with pytest.raises(ExploreConfigError, match="level_step"):
        ExploreConfig(level=LevelSpec("none", level_step=0.0)).validate()
    LocalStore(tmp_path).put("probe", b"")
    code = main(["explore", "--level", "reward-model", "--reward-model", "rm-20260101-000000-abcdef",
                 "--store", str(tmp_path), "--max-env-steps", "100", "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2
    assert "rm-20260101-000000-abcdef" in capsys.readouterr().err


def test_the_summary_names_the_level(tmp_path: Path):
    out = tmp_path / "out"
    code = main(["explore", "--level", "none", "--workers", "1", "--max-env-steps", "300",
                 "--quiet", "--out", str(out)])  # fmt: skip
    assert code == 1  # no win in 300 steps
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["level"], summary["reward_model"], summary["top_level"]) == ("none", None, 0)
