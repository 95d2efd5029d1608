"""The trainer service's response bodies (API version v1): a run's status, the runs, checkpoints.

The request body of ``POST /v1/runs`` is the trainer's own run settings (``TrainConfig`` in
the service): every field there is one line, and the flags of ``koholint train`` and the
OpenAPI schema are generated from it, so it is not repeated here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

RUN_NAME = r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}"
"""A run name: one path segment, a folder name in the run directory and a key prefix in the
store; no leading dot, so never '.' or '..'."""
RUN_NAME_PATTERN = rf"^{RUN_NAME}$"
CHECKPOINT_NAME_PATTERN = rf"^{RUN_NAME}-step[0-9]{{12}}$"
"""A checkpoint name from a ledger: ``<run>-step<env steps, 12 digits>``."""
METRIC_PATTERN = r"^[A-Za-z0-9_]{1,64}$"
TRAJECTORY_PATTERN = rf"^{RUN_NAME}(/{RUN_NAME}){{0,7}}$"
"""A stored trajectory as a request names it: a relative name of run-name parts (a key in the
object store, or a file under the trainer's trajectory folder); never '..' nor absolute."""
TRACEBACK_MARKERS = ("Traceback (most recent call last)", '  File "')
RunState = Literal["starting", "running", "stopping", "finished", "stopped", "failed"]
ACTIVE_STATES = ("starting", "running", "stopping")


MAX_EVALUATIONS_KEPT = 64


class PolicyEvaluation(BaseModel):
    """One evaluation during a run: the policy played on its own (trainer's evaluation.*)."""

    env_steps: int = Field(ge=0)
    """the training phase's env steps when it was played"""
    total_env_steps: int = Field(ge=0)
    """phase 1's env steps (phase both) plus the training phase's: the run's whole budget"""
    start: str = Field(max_length=64)
    """where the episodes started (power_on or a named state)"""
    episodes: int = Field(ge=1)
    wins: int = Field(ge=0)
    win_rate: float = Field(ge=0, le=1)
    interval: tuple[float, float]
    """the win rate's 95% Wilson interval"""
    seconds: float = Field(ge=0)
    """wall time of the evaluation (training waits meanwhile)"""
    first_seed: int = Field(0, ge=0)
    """the episodes' seeds: first_seed, first_seed + 1, ..."""
    emulator_steps: int = Field(0, ge=0)
    """the emulator's work of its episodes, in steps of the frame skip (the planner's macros
    included): work the run did beside its env steps"""


class RunStatus(BaseModel):
    """A run's live status (``GET /v1/runs/{run}``)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    run: str
    """the run's name"""
    state: RunState = "starting"
    """starting, running, stopping, then finished, stopped (asked to) or failed (see error)"""
    iterations: int = 0
    """training iterations, counted across resumes"""
    env_steps: int = 0
    """environment steps sampled, counted across resumes"""
    steps_per_second: float = 0.0
    """env steps per second sampled by this process since it started (or resumed) the run"""
    episode_return_mean: float | None = None
    """mean episode return (window of 100 episodes); null before an episode ended"""
    rooms_mean: float | None = None
    """rooms visited per episode (window of 100 episodes)"""
    cells_mean: float | None = None
    """cells visited per episode (window of 100 episodes)"""
    win_rate: float | None = None
    """share of episodes won (window of 100 episodes)"""
    archive_cells: int = 0
    """cells in the Go-Explore archive"""
    archive_level: int = 0
    """phase 1 (phase explore or both): the archive's best progress level"""
    explore_milestones: dict[str, int | None] = Field(default_factory=dict)
    """phase 1: env steps at which the archive first reached each milestone (null: not yet)"""
    curriculum: dict[str, float] = Field(default_factory=dict)
    """robustify: start_step (the demo step episodes start from), demo_length, success_rate
    (there), moves (of the start so far), swarm_level, pass, later_success_rate (of the last
    episodes from later starts, once there are any)"""
    checkpoints: int = 0
    """checkpoints in the run's ledger"""
    resumed_from: str | None = None
    """the checkpoint this run continued from, if any"""
    world: dict[str, str] = Field(default_factory=dict)
    """the ROM the run plays: its ``title``, ``sha256`` and ``path`` (empty before preflight)"""
    error: str | None = None
    """why the run failed (state failed); never a traceback (the logs have it)"""
    export: dict[str, int] = Field(
        default_factory=lambda: dict.fromkeys(
            ("written", "announced", "dropped", "failed", "abandoned", "unannounced", "lost"), 0
        )
    )
    """episode segments the export queues wrote to the store, announced on the stream, dropped
    (queue full past the producer's wait), failed to write and abandoned unwritten at the
    run's end; ``unannounced``: written, their notice not yet on the stream (the next start of
    the run announces them); ``lost``: dropped + failed + abandoned. Counted per iteration
    while the run lasts, exact once it has ended"""
    export_wait_seconds: float = 0.0
    """time the envs waited for room in a full export queue (the queue never drops a segment
    unless that wait runs out)"""
    reached: dict[str, float] = Field(default_factory=dict)
    """per milestone (sword, puzzle, dungeon, key, instrument): the highest share of
    episodes (100-episode window) that had reached it"""
    reached_last: dict[str, float] = Field(default_factory=dict)
    """per milestone: the share of the last 100 episodes that had reached it"""
    reward_model: str | None = None
    """the reward-model version the envs shape their new episodes with (null: none yet)"""
    shaped_steps: dict[str, int] = Field(default_factory=dict)
    """env steps shaped by each reward-model version, counted since the run (re)started"""
    phase_one_env_steps: int = 0
    """phase both: the env steps phase 1 took to its first win (env_steps counts phase 2's)"""
    evaluations: list[PolicyEvaluation] = Field(default_factory=list,
                                                max_length=MAX_EVALUATIONS_KEPT)  # fmt: skip
    """the evaluations so far (the last 64), oldest first"""
    reports: list[PolicyEvaluation] = Field(default_factory=list, max_length=8)
    """the winning policy played again on fresh episode seeds (evaluation.report_seed on),
    from each start the stop rule judged it on: the figures to report"""
    other_work: dict[str, int] = Field(default_factory=dict)
    """the emulator's work beside the policy's env steps, in steps of the frame skip:
    ``evaluation`` (every evaluation's and report's episodes), ``planner_macros`` (frames
    the planner's macros emulated in training episodes) and ``teachers`` (the warm start's
    lessons: the demonstration replayed, the teachers' episodes, DAgger's rounds before and
    during PPO)"""

    @property
    def env_steps_in_all(self) -> int:
        """phase 1 and its shortening, then phase 2: what total_env_steps bounds"""
        return self.phase_one_env_steps + self.env_steps

    @property
    def emulator_steps_in_all(self) -> int:
        """env steps in all plus the work beside them (``other_work``)"""
        return self.env_steps_in_all + sum(self.other_work.values())

    @field_serializer("error")
    def _error_without_traceback(self, error: str | None) -> str | None:
        return None if error is None else without_traceback(error)


def without_traceback(text: str, limit: int = 1000) -> str:
    """A failure's message fit for a response: a traceback (Ray puts the remote one in its
    errors' text) is cut down to its last line, the exception itself."""
    if any(marker in text for marker in TRACEBACK_MARKERS):
        lines = [line for line in text.splitlines() if line.strip()]
        plain = [line for line in lines if not line[:1].isspace() and "Traceback" not in line]
        text = plain[-1] if plain else "the run failed; the trainer's log has the traceback"
    return text[:limit]


class RunList(BaseModel):
    """The runs this service knows (``GET /v1/runs``): active first, then the newest."""

    runs: list[RunStatus]


class CheckpointRecord(BaseModel):
    """One checkpoint in a run's ledger."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    run: str
    step: int
    """env steps at save time"""
    name: str
    """what ``--resume`` and ``resume_from`` take"""
    prefix: str
    """the checkpoint's folder in the object store"""
    saved_at: float
    """Unix time"""
    metrics: dict[str, float] = Field(default_factory=dict)
    """the run's metrics at save time (episode_return_mean, rooms, cells, win_rate, ...)"""


class CheckpointList(BaseModel):
    """A run's ledger (``GET /v1/checkpoints``); empty, with run null, before any run."""

    run: str | None
    checkpoints: list[CheckpointRecord]
