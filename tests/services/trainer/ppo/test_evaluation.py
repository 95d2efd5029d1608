"""Evaluation during training: when the policy is played, what is recorded, when a run stops."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from koholint.schemas.trainer import PolicyEvaluation, RunStatus
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.curve import LearningCurve
from trainer.ppo.evaluation import WINNING_POLICY, PolicyEvaluator
from trainer.ppo.iterations import IterationLoop
from trainer.ppo.run import TrainingRun

from .test_run import TINY


def evaluation_config(**evaluation: Any) -> TrainConfig:
    return TrainConfig.load({"planner": "rules", "evaluation": evaluation}, {})


def record(win_rate: float, env_steps: int = 1000) -> PolicyEvaluation:
    return PolicyEvaluation(env_steps=env_steps, total_env_steps=env_steps, start="power_on",
                            episodes=10, wins=int(10 * win_rate), win_rate=win_rate,
                            interval=(0.0, 1.0), seconds=1.0)  # fmt: skip


def test_evaluations_fall_after_each_multiple_of_their_period(tmp_path: Path) -> None:
    evaluator = PolicyEvaluator(evaluation_config(every_env_steps=1000), tmp_path, env_steps=0)
    assert [evaluator.due(steps) for steps in (0, 999, 1000, 1024)] == [False, False, True, True]
    resumed = PolicyEvaluator(evaluation_config(every_env_steps=1000), tmp_path, env_steps=2500)
    assert not resumed.due(2900)  # a resumed run's next evaluation is past where it resumed
    assert resumed.due(3000)
    assert not PolicyEvaluator(evaluation_config(), tmp_path, env_steps=0).enabled


def test_a_run_stops_only_at_its_goal(tmp_path: Path) -> None:
    goal = PolicyEvaluator(evaluation_config(every_env_steps=1, stop_at_win_rate=0.9), tmp_path, 0)
    assert not goal.won(record(0.8))
    assert goal.won(record(0.9))
    never = PolicyEvaluator(evaluation_config(every_env_steps=1), tmp_path, 0)
    assert not never.won(record(1.0))


class _Report:
    """What play_policy returns, as much as the evaluator reads."""

    frame_skip = 4

    def __init__(self, start: str, wins: int) -> None:
        self.start, self.wins = start, wins
        self.episodes = [SimpleNamespace(frames=400)] * 10  # 100 steps of the frame skip each
        self.win_rate = wins / 10

    def interval(self) -> tuple[float, float]:
        return (0.0, 1.0)


class _Learner:
    class learner_group:
        @staticmethod
        def get_weights(ids: list[str]) -> dict[str, dict]:
            return {ids[0]: {}}


def _evaluate_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wins: dict[tuple[str, int], int],
    **settings: Any,
) -> tuple[list[tuple[str, int]], RunStatus, bool]:  # fmt: skip
    """One evaluation with play_policy answering `wins` (of 10) by (start, first seed): the
    (start, seed) blocks played, the status, whether the run stops."""
    import trainer.ppo.evaluation as evaluation

    played: list[tuple[str, int]] = []

    def play(policy: Any, play_settings: Any) -> _Report:
        played.append((play_settings.start, play_settings.seed))
        return _Report(play_settings.start, wins.get((play_settings.start, play_settings.seed), 10))

    monkeypatch.setattr(evaluation, "play_policy", play)
    monkeypatch.setattr(evaluation, "load_policy", lambda folder: None)
    monkeypatch.setattr(evaluation, "policy_from_state", lambda *args, **kwargs: None)
    config = evaluation_config(every_env_steps=1, stop_at_win_rate=0.9, **settings)
    (tmp_path / "evaluation" / "policy").mkdir(parents=True)
    (tmp_path / "evaluation" / "policy" / "policy.json").write_text('{"source": {}}')
    evaluator = PolicyEvaluator(config, tmp_path, 0)
    status = RunStatus(run="r", env_steps=1000)
    return played, status, evaluator.won(evaluator.evaluate(_Learner(), status))


@pytest.mark.parametrize(
    ("wins", "starts", "stopped"),
    [
        ({"power-on": 9, "start_of_play": 9}, ["power-on", "start_of_play"], True),
        ({"power-on": 9, "start_of_play": 8}, ["power-on", "start_of_play"], False),
        ({"power-on": 8, "start_of_play": 10}, ["power-on"], False),  # not confirmed: not tried
    ],
)
def test_a_goal_reached_from_power_on_is_confirmed_from_the_second_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wins: dict[str, int], starts: list[str],
    stopped: bool,
) -> None:  # fmt: skip
    played, status, result = _evaluate_once(
        tmp_path, monkeypatch, {(start, 0): won for start, won in wins.items()},
        confirm_start="start_of_play",
    )  # fmt: skip
    # A stop is reported on fresh seeds, from each start it was judged on.
    reported = [(start, 10_000) for start in starts] if stopped else []
    assert played == [(start, 0) for start in starts] + reported
    assert [e.start for e in status.evaluations] == starts
    assert [(r.start, r.first_seed) for r in status.reports] == reported
    assert status.other_work["evaluation"] == 1000 * len(played)  # 10 episodes of 100
    assert result is stopped
    assert (tmp_path / WINNING_POLICY).exists() is stopped
    if stopped:  # the policy's metadata counts the work that made it, not its reports
        source = json.loads((tmp_path / WINNING_POLICY / "policy.json").read_text())["source"]
        assert source["other_work"] == {"evaluation": 1000 * len(starts)}
        assert source["emulator_steps_in_all"] == 1000 + 1000 * len(starts)
    logged = (tmp_path / "evaluation" / "evaluations.jsonl").read_text().splitlines()
    assert [json.loads(line)["start"] for line in logged] == starts


@pytest.mark.parametrize(
    ("second_block", "judged", "stopped"),
    [
        (9, [("power-on", 0), ("power-on", 5000), ("start_of_play", 0)], True),
        (8, [("power-on", 0), ("power-on", 5000)], False),  # the lucky first block alone
    ],
)
def test_a_goal_is_confirmed_on_a_second_block_of_seeds_before_the_second_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second_block: int,
    judged: list[tuple[str, int]], stopped: bool,
) -> None:  # fmt: skip
    wins = {("power-on", 0): 9, ("power-on", 5000): second_block, ("start_of_play", 0): 9}
    played, status, result = _evaluate_once(
        tmp_path, monkeypatch, wins, confirm_episodes=10, confirm_seed=5000,
        confirm_start="start_of_play",
    )  # fmt: skip
    reported = [("power-on", 10_000), ("start_of_play", 10_000)] if stopped else []
    assert played == judged + reported
    assert [(e.start, e.first_seed) for e in status.evaluations] == judged
    assert result is stopped
    assert (tmp_path / WINNING_POLICY).exists() is stopped


@pytest.mark.parametrize(
    ("evaluation", "message"),
    [
        ({"report_seed": 50}, r"report_seed 50 with 100 report_episodes overlaps evaluation\.seed's seeds 0-99"),
        ({"confirm_episodes": 100, "confirm_seed": 99},
         r"confirm_seed 99 with 100 confirm_episodes overlaps evaluation\.seed's seeds 0-99"),
        ({"confirm_episodes": 100, "confirm_seed": 9950},
         r"report_seed 10000 .* overlaps evaluation\.confirm_seed's seeds 9950-10049"),
    ],
)  # fmt: skip
def test_the_stop_rules_confirmations_and_reports_seeds_never_overlap(
    evaluation: dict[str, int], message: str
) -> None:
    with pytest.raises(TrainConfigError, match=message):
        TrainConfig.load({"evaluation": evaluation}, {})


def test_seed_blocks_apart_are_accepted_and_an_empty_block_overlaps_nothing() -> None:
    fresh = TrainConfig.load(
        {"evaluation": {"seed": 200, "report_seed": 50, "report_episodes": 100,
                        "confirm_episodes": 100, "confirm_seed": 300}}, {}
    )  # fmt: skip
    assert (fresh.evaluation.report_seed, fresh.evaluation.confirm_seed) == (50, 300)
    no_confirmation = TrainConfig.load({"evaluation": {"confirm_seed": 0}}, {})
    assert no_confirmation.evaluation.confirm_episodes == 0


def test_an_llm_planner_is_evaluated_with_the_rules(tmp_path: Path) -> None:
    config = TrainConfig.load({"planner": "local", "evaluation": {"every_env_steps": 10}}, {})
    settings = PolicyEvaluator(config, tmp_path, 0).play_settings()
    assert (settings.planner, settings.start, settings.sticky, settings.episodes) == (
        "rules",
        "power-on",
        0.25,
        100,
    )


class _Algo:
    """Counts env steps as RLlib's result does (the loop's own logic is under test)."""

    def __init__(self) -> None:
        self.steps = 0

    def train(self) -> dict[str, Any]:
        self.steps += 100
        return {"env_runners": {"num_env_steps_sampled_lifetime": self.steps}}


class _Actors:
    def archive_cells(self) -> int:
        return 0

    def curriculum_position(self) -> None:
        return None


class _Evaluator:
    def __init__(self, rates: list[float]) -> None:
        self.rates, self.played = rates, 0

    def due(self, env_steps: int) -> bool:
        return env_steps % 200 == 0

    def evaluate(self, algo: Any, status: RunStatus) -> PolicyEvaluation:
        self.played += 1
        return record(self.rates[self.played - 1], status.env_steps)

    def won(self, evaluation: PolicyEvaluation) -> bool:
        return evaluation.win_rate >= 0.9


class _Checkpoints:
    def __init__(self) -> None:
        self.saved: list[int] = []

    def save(self, algo: Any, status: RunStatus, curve: Any, metrics: Any) -> None:
        self.saved.append(status.env_steps)


def test_the_loop_ends_on_the_first_winning_evaluation_with_a_checkpoint() -> None:
    config = TrainConfig.load({"total_env_steps": 10_000, "checkpoint_every_iterations": 1000}, {})
    status, evaluator, checkpoints = (
        RunStatus(run="r"),
        _Evaluator([0.1, 0.95, 1.0]),
        _Checkpoints(),
    )
    loop = IterationLoop(_Algo(), config, status, LearningCurve(), _Actors(), checkpoints,  # type: ignore[arg-type]
                         None, 0, evaluator)  # type: ignore[arg-type]  # fmt: skip
    loop.run(threading.Event(), None)
    assert loop.won
    assert status.env_steps == 400  # evaluated at 200 (0.1) and 400 (0.95): stopped there
    assert evaluator.played == 2
    assert checkpoints.saved == [400]


@pytest.mark.slow
def test_a_run_plays_its_policy_from_power_on_and_records_the_total_steps(tmp_path: Path) -> None:
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    settings = {**TINY, "run": "judged", "total_env_steps": 768, "planner": "rules",
                "export_every_episodes": 0, "archive_restart_every": 0,
                "evaluation": {"every_env_steps": 256, "episodes": 3, "processes": 1}}  # fmt: skip
    status = TrainingRun(TrainConfig.load(settings, {}), deployment).run()
    assert status.state == "finished"
    assert [e.env_steps for e in status.evaluations] == [256, 512, 768]
    for evaluation in status.evaluations:
        assert (evaluation.start, evaluation.episodes) == ("power_on", 3)
        assert evaluation.total_env_steps == evaluation.env_steps  # phase train: no phase 1
        assert 0 <= evaluation.win_rate <= evaluation.interval[1]
    policy = json.loads((tmp_path / "runs/judged/evaluation/policy/policy.json").read_text())
    assert policy["source"]["total_env_steps"] == 768
    assert policy["source"]["env_steps"] == 768
    assert policy["planner"] == "rules"
    assert not (tmp_path / "runs/judged" / WINNING_POLICY).exists()  # no goal set


def test_the_planners_macro_frames_are_counted_apart_from_the_policys_steps() -> None:
    from trainer.ppo.iterations import read_result

    status = RunStatus(run="r")
    runners = {"num_env_steps_sampled_lifetime": 512, "emulator_frames": 4 * 300 + 4 * 70,
               "episode_steps": 300}  # fmt: skip
    read_result({"env_runners": runners}, status, frame_skip=4)
    assert status.other_work["planner_macros"] == 70
    assert status.emulator_steps_in_all == 512 + 70
