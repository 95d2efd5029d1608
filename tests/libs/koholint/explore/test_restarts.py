"""Go-Explore restarts from archived cells, on the real environment."""

import pytest

from koholint.env.zelda import Action, ZeldaEnv
from koholint.explore.archive import Archive
from koholint.explore.restarts import GoExploreWrapper, LocalArchiveSource
from koholint.game.ram import RamAddress


def count_saves(env) -> list[int]:
    """A list that grows by one each time the env's emulator saves a state."""
    saves: list[int] = []
    gameboy = env.unwrapped.gameboy
    original = gameboy.save_state
    gameboy.save_state = lambda: saves.append(1) or original()
    return saves


def standing_explorer(archive: Archive, **settings) -> GoExploreWrapper:
    """A Go-Explore env without sticky actions that never restarts from the archive."""
    env = ZeldaEnv(
        max_episode_steps=settings.pop("max_episode_steps", 40), sticky_action_probability=0.0
    )
    return GoExploreWrapper(env, LocalArchiveSource(archive), restart_every=100, **settings)


def test_go_explore_restarts_from_archived_cells():
    archive = Archive()
    env = GoExploreWrapper(
        ZeldaEnv(max_episode_steps=40), LocalArchiveSource(archive), restart_every=2
    )
    env.reset(seed=0)
    for _ in range(40):
        env.step(Action.UP)  # into the crossroads; the episode is truncated at 40 steps
    rooms = {cell[0] for cell in archive.cells}
    assert (0, 0, 0x11) in rooms
    _, info = env.reset()
    assert info["go_explore_restart"]
    assert env.restarted
    env.close()


def test_restart_arguments_are_checked():
    with pytest.raises(ValueError, match="restart_every"):
        GoExploreWrapper(ZeldaEnv(), LocalArchiveSource(Archive()), restart_every=0)


def test_restarted_episodes_count_from_the_frontier_cell_and_states_are_not_resaved():
    archive = Archive()
    env = GoExploreWrapper(
        ZeldaEnv(max_episode_steps=30), LocalArchiveSource(archive), restart_every=2
    )
    saves = count_saves(env)
    env.reset(seed=0)
    for _ in range(30):
        env.step(Action.UP)
    first_episode_saves = len(saves)
    _, info = env.reset()  # episode 2: a restart
    assert info["go_explore_restart"]
    assert env._steps > 0  # counting continues from the frontier cell's steps
    env.close()
    assert first_episode_saves <= len(archive)  # one save per improved cell, no more


def test_a_cell_is_resaved_only_for_a_real_shortcut():
    archive = Archive()
    env = standing_explorer(archive, improve_by=8)
    saves = count_saves(env)
    env.reset(seed=0)
    for _ in range(6):  # stand still: the same cell at steps 1..6, only the first is new
        env.step(Action.NOOP)
    assert len(saves) == 1
    env.reset(seed=0)
    for _ in range(6):  # steps 1..6 again: no shortcut of 8 steps
        env.step(Action.NOOP)
    assert len(saves) == 1
    env._known = dict.fromkeys(env._known, 14)
    env.step(Action.NOOP)  # step 7 is not 8 sooner than 14
    assert len(saves) == 1
    env._known = dict.fromkeys(env._known, 16)
    env.step(Action.NOOP)  # step 8 is 8 sooner than 16 -> saved
    assert len(saves) == 2
    with pytest.raises(ValueError, match="improve_by"):
        GoExploreWrapper(ZeldaEnv(), LocalArchiveSource(archive), improve_by=0)


def test_cells_the_shared_archive_knows_are_not_saved_again():
    archive = Archive()
    first = GoExploreWrapper(ZeldaEnv(max_episode_steps=20), LocalArchiveSource(archive))
    first.reset(seed=0)
    for _ in range(20):
        first.step(Action.UP)
    first.reset(seed=0)  # flushes its cells into the archive
    assert len(archive) > 3
    second = standing_explorer(archive, max_episode_steps=20)
    saves = count_saves(second)
    second.reset(seed=0)  # learns what the archive knows
    for _ in range(3):  # the same first cells, no sooner: nothing to save
        second.step(Action.NOOP)
    assert saves == []
    first.close()
    second.close()


def test_the_same_place_further_along_the_route_is_a_new_cell():
    archive = Archive()
    env = standing_explorer(archive)
    env.reset(seed=0)
    env.step(Action.NOOP)
    env.unwrapped.gameboy.memory[RamAddress.DUNGEON_SMALL_KEYS] = 1  # a key: one level up
    env.step(Action.NOOP)
    env.reset(seed=0)  # flush
    places = {cell[:3]: [] for cell in archive.cells}
    for cell in archive.cells:
        places[cell[:3]].append(cell[3])
    assert sorted(places[next(iter(places))]) == [0, 1]
    env.close()


def test_envs_sharing_known_cells_do_not_save_each_others_cells_again():
    archive, shared = Archive(), {}
    first, second = (
        GoExploreWrapper(ZeldaEnv(max_episode_steps=40, sticky_action_probability=0.0),
                         LocalArchiveSource(archive), restart_every=100, known=shared)
        for _ in range(2)
    )  # fmt: skip
    saves_first, saves_second = count_saves(first), count_saves(second)
    first.reset(seed=0)
    second.reset(seed=0)
    for _ in range(12):  # the same walk, one env a step behind the other: the same cells
        first.step(Action.UP)
        second.step(Action.UP)
    assert len(saves_first) > 1
    assert saves_second == []  # each cell was known (from the first env) when reached
    assert set(shared) == set(first._improved.cells)
    first.close()
    second.close()
