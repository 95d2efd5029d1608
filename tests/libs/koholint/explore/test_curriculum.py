"""Robustification: the backward curriculum over a winning trajectory, and swarming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from koholint.env.zelda import Action, ZeldaEnv, progress_level
from koholint.explore.curriculum import (
    CurriculumSettings,
    CurriculumWrapper,
    DemoState,
    LocalCurriculum,
    demo_states,
)
from koholint.explore.runner import exploration_env
from koholint.explore.trajectory import winning_demo
from koholint.game.ram import GameplayType, MotionState, RamAddress

WIN_DIRECTORY = Path(__file__).parents[4] / "benchmarks" / "results" / "win"
DEMO = [DemoState(step, f"state-{step}".encode()) for step in (0, 8, 16, 24, 32)]


def curriculum_over(
    demo: list[DemoState], demo_length: int, *, window: int = 20, slack: int = 64, **settings: Any
) -> LocalCurriculum:
    """A curriculum that moves one demo state at a time unless told otherwise."""
    chosen = CurriculumSettings(**{"move_by": 1, **settings})
    return LocalCurriculum(demo, demo_length, chosen, window=window, slack=slack)


def test_the_start_moves_earlier_as_soon_as_enough_episodes_win():
    curriculum = curriculum_over(DEMO, 40, threshold=0.5, window=4, move_by=8)
    start = curriculum.start(seed=0)
    assert (start.state, start.step) == (b"state-32", 32)
    assert start.budget == 2 * (40 - 32) + 64  # time_factor x what the demo took, plus slack
    curriculum.report(32, True)
    curriculum.report(32, False)
    assert curriculum.start_step == 32  # 1 win: the window of 4 could still end below 2
    curriculum.report(32, True)  # 2 wins: 2 of 4 at least, whatever the fourth episode does
    assert curriculum.start_step == 24
    assert curriculum.moves == [24]
    curriculum.report(32, True)  # an episode from the old start does not count
    assert curriculum.success_rate() == 0.0
    for _ in range(4 * 2):
        curriculum.report(curriculum.start_step, True)
    assert curriculum.start_step == 0
    assert curriculum.start(seed=1).state is None  # the env's own start: the curriculum is done
    for _ in range(6):  # wins from the env's own start count, but there is nowhere to move
        curriculum.report(0, True)
    assert curriculum.moves == [24, 16, 8, 0, 0]
    assert curriculum.success_rate() == 1.0


@pytest.mark.parametrize(("threshold", "window"), [(0.1, 20), (0.2, 20), (0.5, 4), (0.3, 7)])
def test_moving_early_decides_as_a_full_window_would(threshold, window):
    """Over random outcomes, the start has moved by the window's last episode exactly when
    the full window's share reaches the threshold."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        outcomes = rng.random(window) < rng.uniform(0.0, 0.6)
        curriculum = curriculum_over(DEMO, 40, threshold=threshold, window=window)
        for won in outcomes:
            curriculum.report(curriculum.start_step, bool(won))
            if curriculum.start_step != 32:
                break
        assert (curriculum.start_step != 32) == (outcomes.mean() >= threshold - 1e-12)


def test_the_position_survives_a_checkpoint():
    curriculum = curriculum_over(DEMO, 40, threshold=0.5, window=4, move_by=8)
    for won in (True, True, False, True):
        curriculum.report(curriculum.start_step, won)
    saved = json.loads(json.dumps(curriculum.state()))
    restored = curriculum_over(DEMO, 40, threshold=0.5, window=4, move_by=8)
    restored.restore(saved)
    assert (restored.start_step, restored.moves) == (24, [24])
    assert restored.success_rate() == curriculum.success_rate() == 0.5
    restored.report(24, True)  # the saved win and this one: the next move
    assert restored.start_step == 16
    with pytest.raises(ValueError, match="another trajectory"):
        curriculum_over(DEMO[:4], 32).restore(saved)
    with pytest.raises(ValueError, match="position 9"):
        curriculum_over(DEMO, 40).restore({**saved, "position": 9})


def test_a_low_success_rate_keeps_the_start():
    curriculum = curriculum_over(DEMO, 40, threshold=0.2, window=10)
    for index in range(30):
        curriculum.report(32, index % 10 == 0)  # 10%
    assert curriculum.start_step == 32


def test_swarming_sends_a_share_of_episodes_to_the_best_level():
    curriculum = curriculum_over(DEMO, 40, swarm_share=0.25)
    assert curriculum.swarm_level() == -1
    curriculum.offer(2, b"level-2")
    curriculum.offer(1, b"level-1")  # lower: ignored
    assert curriculum.swarm_level() == 2
    starts = [curriculum.start(seed) for seed in range(400)]
    swarmed = [start for start in starts if start.step == -1]
    assert {start.state for start in swarmed} == {b"level-2"}
    assert 0.18 < len(swarmed) / len(starts) < 0.32


def test_replaying_sends_a_share_of_episodes_to_later_demo_states():
    curriculum = curriculum_over(DEMO, 40, threshold=0.5, window=2, replay_share=0.5)
    for _ in range(2):  # 32 -> 24 -> 16 (one win of the last two moves it)
        curriculum.report(curriculum.start_step, True)
    assert curriculum.start_step == 16
    starts = [curriculum.start(seed) for seed in range(400)]
    later = [start for start in starts if start.step != 16]
    assert {start.step for start in later} == {24, 32}  # only the route already walked
    assert all(start.budget == 2 * (40 - start.step) + 64 for start in later)
    assert 0.4 < len(later) / len(starts) < 0.6
    assert curriculum.later_success_rate() is None  # the two wins were each at the start
    for _ in range(3):
        curriculum.report(24, True)  # wins from a later start do not move the start
    curriculum.report(32, False)
    assert (curriculum.start_step, curriculum.success_rate()) == (16, 0.0)
    assert curriculum.later_success_rate() == 0.75


def test_replaying_never_draws_the_beginning_or_beyond_the_demo():
    curriculum = curriculum_over(DEMO, 40, threshold=1.0, window=1, replay_share=0.9)
    assert {curriculum.start(seed).step for seed in range(50)} == {32}  # nothing later yet
    for _ in range(5):  # 32 -> 24 -> 16 -> 8 -> 0 -> the env's own start
        curriculum.report(curriculum.start_step, True)
    assert curriculum.position == -1
    steps = {curriculum.start(seed).step for seed in range(200)}
    assert steps == {0, 8, 16, 24, 32}  # 0: the env's own start (no state); never demo[0]
    assert all(curriculum.start(seed).state != b"state-0" for seed in range(200))


def test_more_passes_walk_the_route_again_once_it_wins_from_the_beginning():
    curriculum = curriculum_over(DEMO, 40, threshold=1.0, window=2, passes=2)
    for _ in range(5 * 2):  # 32 -> 24 -> 16 -> 8 -> 0 -> the env's own start
        curriculum.report(curriculum.start_step, True)
    assert (curriculum.position, curriculum.pass_number) == (-1, 1)
    curriculum.report(0, True)
    curriculum.report(0, True)  # wins from the beginning: the second pass, from the end
    assert (curriculum.start_step, curriculum.pass_number) == (32, 2)
    saved = json.loads(json.dumps(curriculum.state()))
    for _ in range(7 * 2):  # the second pass, then wins from the beginning: no third
        curriculum.report(curriculum.start_step, True)
    assert (curriculum.position, curriculum.pass_number) == (-1, 2)
    assert curriculum.moves == [24, 16, 8, 0, 0, 32, 24, 16, 8, 0, 0]
    restored = curriculum_over(DEMO, 40, threshold=1.0, window=2, passes=2)
    restored.restore(saved)
    assert (restored.start_step, restored.pass_number) == (32, 2)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"demo": [], "demo_length": 1}, "demo needs"),
        ({"demo": DEMO[::-1], "demo_length": 40}, "trajectory order"),
        ({"demo": DEMO, "demo_length": 40, "threshold": 0.0}, "threshold"),
        ({"demo": DEMO, "demo_length": 40, "swarm_share": 1.0}, "swarm_share"),
        ({"demo": DEMO, "demo_length": 40, "replay_share": 1.0}, "replay_share"),
        ({"demo": DEMO, "demo_length": 40, "passes": 0}, "passes"),
    ],
)
def test_bad_settings_name_the_fix(settings, message):
    with pytest.raises(ValueError, match=message):
        curriculum_over(**settings)


def test_episodes_start_on_the_demo_and_report_back():
    """A 'demo' walked up from the village: the wrapper starts there, truncates after the
    budget, reports the episode, and offers states of a new level to the swarm."""
    walker = ZeldaEnv(info_state=False)
    trajectory = bytes([Action.UP] * 16 + [Action.NOOP])
    demo = demo_states(trajectory, walker, every=8)
    assert [state.step for state in demo] == [0, 8, 16]
    walker.close()
    curriculum = curriculum_over(demo, len(trajectory), window=1, threshold=1.0, slack=2)
    env = CurriculumWrapper(ZeldaEnv(info_state=False), curriculum)
    _, info = env.reset(seed=0)
    assert info["curriculum"]["start_step"] == 16
    zelda = env.unwrapped
    assert zelda.raw_state.y < 80  # started up the village, not at its start
    assert curriculum.swarm_level() == -1
    steps, truncated = 0, False
    while not truncated:
        _, _, _, truncated, _ = env.step(Action.NOOP)
        steps += 1
    assert steps == 2 * 1 + 2  # (17 - 16) demo steps, doubled, plus the slack
    assert curriculum.start_step == 16  # the episode did not win
    assert curriculum.swarm_level() == progress_level(zelda.raw_state) == 0  # offered once
    env.close()


def test_the_demo_must_replay_without_sticky_actions():
    with pytest.raises(ValueError, match="sticky"):
        demo_states(b"\x01", ZeldaEnv(sticky_action_probability=0.25))


def test_the_credits_are_never_offered_to_the_swarm():
    """Taking the instrument raises the level, but an episode started at the credits would
    end at once and count as a win."""
    walker = ZeldaEnv(info_state=False)
    demo = demo_states(bytes([Action.NOOP] * 9), walker, every=8)
    walker.close()
    curriculum = curriculum_over(demo, 9)
    env = CurriculumWrapper(ZeldaEnv(info_state=False), curriculum)
    env.reset(seed=0)
    zelda = env.unwrapped
    zelda.gameboy.memory[RamAddress.GAMEPLAY_TYPE] = GameplayType.CREDITS
    zelda.gameboy.memory[RamAddress.HAS_INSTRUMENT_1] = 0x02
    _, _, terminated, _, _ = env.step(Action.NOOP)
    assert terminated
    assert curriculum.swarm_level() == -1
    env.close()


def _pass_out_run(end_on_death: bool) -> tuple[int, bool, LocalCurriculum]:
    """Random play from the key hall at half a heart (seed 0's winning trajectory, step 768),
    where Link passes out within a few hundred steps, until the episode ends."""
    actions = (WIN_DIRECTORY / "explore-seed0.actions").read_bytes()
    demo = [state for state in winning_demo(actions, every=8) if state.step == 768]
    curriculum = curriculum_over(demo, len(actions), window=1, threshold=1.0)
    env = CurriculumWrapper(ZeldaEnv(info_state=False), curriculum, end_on_death=end_on_death)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    passed_out, steps, ended = False, 0, False
    while not ended:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(0, 7)))
        steps += 1
        passed_out = passed_out or env.unwrapped.raw_state.motion == MotionState.PASS_OUT
        ended = terminated or truncated
    env.close()
    return steps, passed_out, curriculum


@pytest.mark.slow
def test_an_episode_ends_when_link_passes_out_and_is_no_win():
    steps, passed_out, curriculum = _pass_out_run(end_on_death=True)
    assert passed_out
    assert steps < 2 * (984 - 768) + 64  # before the budget
    assert curriculum.success_rate() == 0.0  # reported, lost: the start stays
    assert curriculum.start_step == 768


@pytest.mark.slow
def test_passing_out_can_be_played_on():
    steps, passed_out, _ = _pass_out_run(end_on_death=False)
    assert passed_out
    assert steps == 2 * (984 - 768) + 64  # played on to the budget


def test_healed_demo_starts_have_full_hearts_and_the_replay_goes_on_unchanged():
    """Seed 0's win crosses the key hall at half a heart (step 704 on): healed, those starts
    have Link's three hearts, and apart from that byte each state is the replay's own."""
    actions = (WIN_DIRECTORY / "explore-seed0.actions").read_bytes()[:777]
    plain = winning_demo(actions, every=8)
    walker = exploration_env(start_state="start_of_play", frame_skip=4, planner=True)
    healed = demo_states(actions, walker, every=8, heal=True)
    assert walker.unwrapped.raw_state.health == 4  # the replay itself ends at half a heart
    walker.close()
    assert [s.step for s in healed] == [s.step for s in plain]
    env = ZeldaEnv(info_state=False)
    health = int(RamAddress.HEALTH)

    def memory_of(state: bytes) -> list[int]:
        env.reset(seed=0, options={"start_state": state})
        return [env.unwrapped.gameboy.memory[address] for address in range(0xC000, 0xE000)]

    hurt = 0
    for ours, theirs in zip(healed[::4], plain[::4], strict=True):
        mine, replayed = memory_of(ours.state), memory_of(theirs.state)
        full = replayed[int(RamAddress.MAX_HEARTS) - 0xC000] * 8
        assert mine[health - 0xC000] == full
        hurt += replayed[health - 0xC000] < full
        mine[health - 0xC000] = replayed[health - 0xC000]
        assert mine == replayed, f"step {ours.step}: healing changed more than the health"
    assert hurt > 10  # the test crossed the hurt stretch, not only full-health starts
    env.close()
