"""Autopilot: decide and execute macros until the game leaves title/dialog/puzzle or a budget ends.

Used by the planner service on env-sim sessions and by the hybrid env wrapper in-process.
Leaving uses the switch's hysteresis: after a macro, the state must read "policy" for
``leave_after`` consecutive frames (one frame apart) before control goes back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from koholint.game.emulator import Button, Emulator
from koholint.planning.backends import Backend, Decision, mode_of
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import MacroResult
from koholint.planning.memory import SessionMemory
from koholint.planning.switch import Mode, PolicySwitch
from koholint.planning.view import read_view
from koholint.schemas.planner import Situation

MAX_REFUSALS_IN_A_ROW = 3
MAX_REPORTED_STEPS = 256

Stop = Literal["cleared", "not_engaged", "no_decision", "budget", "refused", "game_over"]


@dataclass(frozen=True)
class Budget:
    max_macros: int = 64
    max_frames: int = 20_000

    def __post_init__(self) -> None:
        if self.max_macros < 1 or self.max_frames < 1:
            raise ValueError("max_macros and max_frames must be >= 1")


class AutopilotStep(BaseModel):
    decision: Decision
    result: MacroResult | None


class AutopilotReport(BaseModel):
    """What the autopilot did: where it started and ended, each decision and its result."""

    started_in: Mode
    ended_in: Mode
    stopped: Stop
    cleared: bool
    macros: int
    frames: int
    reason: str = Field(max_length=500)
    steps: list[AutopilotStep] = Field(max_length=MAX_REPORTED_STEPS)


def run_autopilot(
    emulator: Emulator,
    backend: Backend,
    memory: SessionMemory,
    *,
    budget: Budget | None = None,
    enter_after: int = 1,
    leave_after: int = 2,
    seed: int = 0,
) -> AutopilotReport:
    """Drive `emulator` with `backend`'s macros while the game is on its title screen, in a
    dialog or in the puzzle."""
    budget = budget or Budget()
    situation = read_view(emulator).situation()
    started = mode_of(situation)
    if started == "policy":
        return AutopilotReport(
            started_in=started, ended_in=started, stopped="not_engaged", cleared=False, macros=0,
            frames=0, reason="the game is in none of title, dialog and puzzle", steps=[],
        )  # fmt: skip
    switch = PolicySwitch(enter_after, leave_after, mode=started)
    executor = MacroExecutor(emulator)
    steps: list[AutopilotStep] = []
    frames = refusals = 0
    while True:
        if len(steps) >= budget.max_macros or frames >= budget.max_frames:
            stop: Stop = "budget"
            reason = f"budget spent: {len(steps)} macros, {frames} frames"
            break
        decision = backend.decide(situation, memory, seed=seed + len(steps))
        if decision.macro is None:
            steps.append(AutopilotStep(decision=decision, result=None))
            stop, reason = "no_decision", decision.reason
            break
        timeout = min(decision.macro.timeout_frames, budget.max_frames - frames)
        macro = decision.macro.model_copy(update={"timeout_frames": timeout})
        result = executor.execute(macro)
        memory.add("result", f"{result.kind} {'ok' if result.ok else 'failed'}: {result.reason}")
        steps.append(AutopilotStep(decision=decision, result=result))
        frames += result.frames
        refusals = refusals + 1 if result.refused else 0
        if refusals >= MAX_REFUSALS_IN_A_ROW:
            stop, reason = "refused", f"{refusals} macros refused in a row: {result.reason}"
            break
        situation, frames = _settle(emulator, switch, frames)
        if situation.state.mode not in ("world", "title"):
            stop, reason = "game_over", f"the game left play ({situation.state.mode})"
            break
        if switch.mode == "policy":
            stop, reason = "cleared", "the game left title, dialog and puzzle"
            break
    return AutopilotReport(
        started_in=started, ended_in=switch.mode, stopped=stop, cleared=stop == "cleared",
        macros=len(steps), frames=frames, reason=reason[:500], steps=steps[-MAX_REPORTED_STEPS:],
    )  # fmt: skip


def _settle(emulator: Emulator, switch: PolicySwitch, frames: int) -> tuple[Situation, int]:
    """Observe after a macro; while the state reads "policy" but the switch has not let go,
    wait a frame and look again (the leave hysteresis)."""
    while True:
        situation = read_view(emulator).situation()
        observed = mode_of(situation)
        mode = switch.observe(observed)
        if observed != "policy" or mode == "policy" or situation.state.mode != "world":
            return situation, frames
        emulator.hold(Button.NONE)
        emulator.tick(1)
        frames += 1
