"""Rules and LLM backends (the LLM one against the scripted server), memory, autopilot."""

from __future__ import annotations

import pytest
from tests.libs.koholint.llm.conftest import Reply, ScriptedLlm, answer

from koholint.game.emulator import GameBoy
from koholint.game.ram import RoomFlag
from koholint.llm.client import LlmClient, RetryPolicy, RouteSettings
from koholint.planning.autopilot import Budget, run_autopilot
from koholint.planning.backends import LlmBackend, RulesBackend
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import AdvanceDialog, Choose, Interact, PushBlock, StartGame
from koholint.planning.memory import SessionMemory
from koholint.planning.view import read_view
from koholint.schemas.planner import Situation

DIALOG_STARTS = ("before_npc", "before_chest", "before_shop")


@pytest.fixture
def gameboy() -> GameBoy:
    with GameBoy() as gameboy:
        yield gameboy


def start(gameboy: GameBoy, name: str) -> Situation:
    gameboy.reset(name)
    if name in DIALOG_STARTS:
        assert MacroExecutor(gameboy).execute(Interact(direction="up")).ok
    return read_view(gameboy).situation()


def llm_backend(llm: ScriptedLlm) -> LlmBackend:
    routes = {
        r: RouteSettings(model=f"{r}-model", timeout_s=2)
        for r in ("dialog", "puzzle", "state", "vision")
    }
    client = LlmClient(
        llm.url,
        routes,
        retry=RetryPolicy(attempts=2, base_s=0, max_s=0),  # type: ignore[attr-defined]
    )
    return LlmBackend(client, name="llm-d", vision=True)


def test_rules_decide_each_start(gameboy: GameBoy) -> None:
    rules, memory = RulesBackend(), SessionMemory()
    assert rules.decide(start(gameboy, "before_npc"), memory).macro == AdvanceDialog()
    puzzle = rules.decide(start(gameboy, "before_puzzle"), memory)
    assert puzzle.mode == "puzzle"
    assert puzzle.macro == PushBlock(direction="right")
    assert "5 pushes" in puzzle.reason
    policy = rules.decide(start(gameboy, "start_of_play"), memory)
    assert policy.macro is None
    assert policy.goal == "find the sword"
    assert policy.memory is not None
    assert policy.memory.items == 3


@pytest.mark.parametrize("name", [*DIALOG_STARTS, "before_puzzle"])
def test_rules_autopilot_clears_every_start(gameboy: GameBoy, name: str) -> None:
    start(gameboy, name)
    report = run_autopilot(gameboy, RulesBackend(), SessionMemory())
    assert report.stopped == "cleared", report.reason
    assert report.cleared
    situation = read_view(gameboy).situation()
    assert not situation.state.dialog.open
    if name == "before_puzzle":
        assert situation.state.room_status & RoomFlag.PUZZLE_SOLVED
        assert report.macros == 5


def test_autopilot_not_engaged_outside_dialog_and_puzzle(gameboy: GameBoy) -> None:
    start(gameboy, "start_of_play")
    report = run_autopilot(gameboy, RulesBackend(), SessionMemory())
    assert report.stopped == "not_engaged"
    assert report.frames == 0


def test_every_backend_starts_the_game_from_power_on(
    gameboy: GameBoy, scripted_llm: ScriptedLlm
) -> None:
    title = read_view(gameboy).situation()  # a new GameBoy is at power-on
    for backend in (RulesBackend(), llm_backend(scripted_llm)):
        decision = backend.decide(title, SessionMemory())
        assert decision.mode == "title"
        assert decision.macro == StartGame()
    assert scripted_llm.requests == []  # the menus are fixed: no model is asked
    report = run_autopilot(gameboy, RulesBackend(), SessionMemory())
    assert report.started_in == "title"
    assert report.stopped == "cleared", report.reason
    assert [step.decision.macro for step in report.steps] == [StartGame()]
    assert read_view(gameboy).in_play


def test_autopilot_budget(gameboy: GameBoy) -> None:
    start(gameboy, "before_puzzle")
    report = run_autopilot(gameboy, RulesBackend(), SessionMemory(), budget=Budget(max_macros=2))
    assert report.stopped == "budget"
    assert report.macros == 2
    assert not report.cleared


def test_llm_dialog_choice_is_checked_and_repaired(
    gameboy: GameBoy, scripted_llm: ScriptedLlm
) -> None:
    situation = start(gameboy, "before_shop")
    MacroExecutor(gameboy).execute(AdvanceDialog())
    situation = read_view(gameboy).situation()
    assert situation.state.dialog.choice_shown
    scripted_llm.script(answer(action="advance", option=0), answer(action="choose", option=1))
    decision = llm_backend(scripted_llm).decide(situation, SessionMemory(), seed=3)
    assert decision.macro == Choose(option=1)
    assert [c.outcome for c in decision.llm_calls] == ["repaired"]
    assert scripted_llm.requests[0][0] == "dialog"
    assert scripted_llm.requests[0][1]["seed"] == 3


def test_llm_puzzle_illegal_push_never_executes(
    gameboy: GameBoy, scripted_llm: ScriptedLlm
) -> None:
    situation = start(gameboy, "before_puzzle")
    scripted_llm.script(answer(direction="down"), answer(direction="up"))  # tree below, can't reach
    decision = llm_backend(scripted_llm).decide(situation, SessionMemory())
    assert decision.macro is None
    assert "rejected" in decision.reason
    assert decision.llm_calls[0].outcome == "rejected"
    prompt = scripted_llm.requests[0][1]["messages"][-1]["content"]
    assert "Pushes that keep the puzzle solvable: right, left" in prompt


def test_llm_autopilot_solves_the_puzzle_with_scripted_answers(
    gameboy: GameBoy, scripted_llm: ScriptedLlm
) -> None:
    start(gameboy, "before_puzzle")
    scripted_llm.script(*(answer(direction=d) for d in ("right", "right", "down", "down", "down")))
    report = run_autopilot(gameboy, llm_backend(scripted_llm), SessionMemory())
    assert report.cleared, report.reason


def test_llm_unavailable_gives_no_decision(gameboy: GameBoy, scripted_llm: ScriptedLlm) -> None:
    situation = start(gameboy, "before_npc")
    decision = llm_backend(scripted_llm).decide(situation, SessionMemory())  # every reply 500
    assert decision.macro is None
    assert "gave up" in decision.reason


def test_llm_state_goal_and_vision(gameboy: GameBoy, scripted_llm: ScriptedLlm) -> None:
    situation = start(gameboy, "start_of_play")
    scripted_llm.script(Reply(status=400), answer(goal="find the sword"))
    decision = llm_backend(scripted_llm).decide(situation, SessionMemory(), frame_png=b"\x89PNG")
    assert decision.goal == "find the sword"
    assert decision.macro is None
    assert "HTTP 400" in decision.vision["error"]
    assert scripted_llm.requests[0][0] == "vision"


def test_memory_is_bounded() -> None:
    memory = SessionMemory(max_items=4, max_chars=500)
    for i in range(10):
        memory.add("decision", f"{i}" * 150)
    report = memory.report()
    assert report.items <= 4
    assert report.chars <= 500
    assert report.recent[-1].text.startswith("9")
    memory.add("goal", "x" * 1000)
    assert memory.report().recent[-1].text == "x" * 200
    with pytest.raises(ValueError, match="max_items"):
        SessionMemory(max_items=0)


def test_llm_dead_end_push_is_repaired(gameboy: GameBoy, scripted_llm: ScriptedLlm) -> None:
    from koholint.game.ram import RamAddress
    from koholint.game.tiles import Metatile

    gameboy.reset("before_puzzle")
    gameboy.memory[RamAddress.ROOM_OBJECTS + 2 * 16 + 3] = Metatile.FLOOR
    gameboy.memory[RamAddress.ROOM_OBJECTS + 2 * 16 + 7] = Metatile.BLOCK
    situation = read_view(gameboy).situation()
    scripted_llm.script(answer(direction="right"), answer(direction="left"))
    decision = llm_backend(scripted_llm).decide(situation, SessionMemory())
    assert decision.macro == PushBlock(direction="left")
    assert "can never reach the plate" in decision.llm_calls[0].validation_errors[0]
