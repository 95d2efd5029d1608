"""Deciders behind one interface: the rule-based solver and language models (llm-d or local).

``decide(situation, memory, seed=…)`` classifies the situation (dialog beats puzzle) and
returns a ``Decision``: a validated macro, or none with the reason. ``RulesBackend`` is a
deterministic solver for this cartridge's dialogs and puzzle, named as what it is.
``LlmBackend`` asks the gateway's routes through ``LlmClient``: the same class serves the
real llm-d gateway and the local model server, which speak the same contract.
"""

from __future__ import annotations

import base64
import time
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from koholint.game.ram import InventoryItem
from koholint.game.tiles import Metatile
from koholint.llm.client import (
    TEXT_ROUTES,
    CallLog,
    CallRecord,
    LlmClient,
    LlmError,
    RetryPolicy,
    RouteSettings,
)
from koholint.planning.macros import (
    AdvanceDialog,
    Choose,
    Direction,
    Macro,
    PushBlock,
    StartGame,
)
from koholint.planning.memory import MemoryReport, SessionMemory
from koholint.planning.puzzle import (
    find_tiles,
    push_problem,
    safe_pushes,
    solve,
)
from koholint.planning.switch import Mode, classify
from koholint.planning.view import is_dialog_state, is_puzzle_state, is_title_state
from koholint.schemas.planner import Situation

SHOP_PRICE = 10
OBJECTIVES = (
    "find the sword",
    "open the gate and enter the dungeon",
    "find the dungeon key",
    "open the locked door",
    "take the instrument",
)
Objective = Literal[
    "find the sword",
    "open the gate and enter the dungeon",
    "find the dungeon key",
    "open the locked door",
    "take the instrument",
]


class CallSummary(BaseModel):
    route: str
    model: str
    outcome: str
    seed: int
    latency_ms: float
    attempts: int
    validation_errors: list[str]


class Decision(BaseModel):
    """A decision record: who decided what, from which mode, and why."""

    mode: Mode
    macro: Macro | None
    reason: str = Field(max_length=500)
    backend: str
    goal: str | None = None
    vision: dict[str, Any] | None = None
    llm_calls: list[CallSummary] = Field(default_factory=list)
    latency_ms: float = 0.0
    memory: MemoryReport | None = None


class Backend(Protocol):
    name: str

    def decide(
        self,
        situation: Situation,
        memory: SessionMemory,
        *,
        seed: int = 0,
        frame_png: bytes | None = None,
    ) -> Decision: ...


def mode_of(situation: Situation) -> Mode:
    return classify(
        is_dialog_state(situation), is_puzzle_state(situation), is_title_state(situation)
    )


def start_the_game(decision: Decision) -> None:
    """The menus before play are fixed; every backend answers them with the same macro,
    no model asked."""
    decision.macro = StartGame()
    decision.reason = "the opening (title, file select, name entry): start the game"


def link_cell(situation: Situation) -> tuple[int, int]:
    return situation.state.link.tile_x, situation.state.link.tile_y


def next_objective(situation: Situation) -> Objective:
    """The cartridge's next step from what Link holds and where he is."""
    state = situation.state
    if not state.inventory.items & (1 << InventoryItem.SWORD):
        return "find the sword"
    if not state.room.indoor:
        return "open the gate and enter the dungeon"
    if state.keys:
        return "open the locked door"
    if any(Metatile.INSTRUMENT in row for row in situation.tiles):
        return "take the instrument"
    return "find the dungeon key"


def _finish(decision: Decision, memory: SessionMemory, started: float) -> Decision:
    if decision.goal and memory.goal() != decision.goal:
        memory.add("goal", decision.goal)
    if decision.macro is not None:
        memory.add("decision", f"{decision.mode}: {decision.macro.model_dump_json()}")
    decision.latency_ms = (time.perf_counter() - started) * 1000
    decision.memory = memory.report()
    return decision


class RulesBackend:
    """Deterministic solver for the cartridge: reads dialogs through, answers the shop's
    question yes when Link can pay, solves the block puzzle by breadth-first search."""

    name = "rules"

    def decide(
        self,
        situation: Situation,
        memory: SessionMemory,
        *,
        seed: int = 0,
        frame_png: bytes | None = None,
    ) -> Decision:
        started = time.perf_counter()
        mode = mode_of(situation)
        decision = Decision(mode=mode, macro=None, reason="", backend=self.name)
        if mode == "title":
            start_the_game(decision)
        elif mode == "dialog":
            dialog = situation.state.dialog
            if dialog.choice_shown:
                option = 0 if situation.state.rupees >= SHOP_PRICE else 1
                decision.macro = Choose(option=option)
                decision.reason = f"a question: option {option} ({situation.state.rupees} rupees)"
            else:
                decision.macro = AdvanceDialog()
                decision.reason = "read the dialog through"
        elif mode == "puzzle":
            pushes = solve(situation.tile_tuple(), link_cell(situation))
            if pushes:
                decision.macro = PushBlock(direction=pushes[0])
                decision.reason = f"{len(pushes)} pushes left: {' '.join(pushes)}"
            else:
                decision.reason = "no push sequence puts the block on the plate from here"
        else:
            decision.goal = next_objective(situation)
            decision.reason = "the policy is in control"
        return _finish(decision, memory, started)


# -- what the language models answer, per route ---------------------------------
class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DialogAnswer(_Answer):
    action: Literal["advance", "choose"]
    option: int = Field(ge=0, le=1, description="the option to choose (0 = first); 0 to advance")


class PuzzleAnswer(_Answer):
    direction: Direction


class StateAnswer(_Answer):
    goal: Objective


class VisionAnswer(_Answer):
    scene: Literal["title", "world", "dialog", "credits"]


SYSTEM_PROMPT = (
    "You play a Game Boy adventure game as Link. You get the game state as text and answer "
    "with one JSON object that follows the given schema, nothing else."
)
TILE_CHARS = {
    Metatile.FLOOR: ".", Metatile.DUNGEON_FLOOR: ".", Metatile.BLOCK: "B", Metatile.PLATE: "P",
    Metatile.GATE: "G", Metatile.BLOCK_ON_PLATE: "X", Metatile.WATER: "~",
}  # fmt: skip


def room_picture(situation: Situation) -> str:
    """The room as text, one character a tile; L marks Link."""
    lx, ly = link_cell(situation)
    rows = []
    for y, row in enumerate(situation.tiles):
        chars = [TILE_CHARS.get(tile, "#") for tile in row]  # type: ignore[call-overload]
        if y == ly and 0 <= lx < len(chars):
            chars[lx] = "L"
        rows.append("".join(chars))
    return "\n".join(rows)


def _messages(user: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _summary(record: CallRecord) -> CallSummary:
    return CallSummary(
        route=record.route, model=record.model, outcome=record.outcome, seed=record.seed,
        latency_ms=round(record.latency_ms, 2), attempts=record.attempts,
        validation_errors=record.validation_errors,
    )  # fmt: skip


class LlmBackend:
    """Asks the gateway: /dialog and /puzzle for macros, /state for the goal while the policy
    plays, /vision for the scene when a frame comes and `vision` is on."""

    def __init__(self, client: LlmClient, *, name: str = "llm-d", vision: bool = False) -> None:
        self.client, self.name, self.vision = client, name, vision

    def decide(
        self,
        situation: Situation,
        memory: SessionMemory,
        *,
        seed: int = 0,
        frame_png: bytes | None = None,
    ) -> Decision:
        started = time.perf_counter()
        mode = mode_of(situation)
        decision = Decision(mode=mode, macro=None, reason="", backend=self.name)
        calls_before = self.client.log.total
        if frame_png is not None and self.vision and "vision" in self.client.routes:
            decision.vision = self._vision(frame_png, seed)
        try:
            if mode == "title":
                start_the_game(decision)
            elif mode == "dialog":
                self._dialog(situation, memory, seed, decision)
            elif mode == "puzzle":
                self._puzzle(situation, memory, seed, decision)
            elif "state" in self.client.routes:
                answer = self.client.ask(
                    "state",
                    _messages(self._state_prompt(situation, memory)),
                    StateAnswer,
                    seed=seed,
                )
                decision.goal = answer.value.goal
                decision.reason = "the policy is in control"
            else:
                decision.reason = "the policy is in control"
        except LlmError as error:
            decision.macro = None
            decision.reason = f"no decision: {error}"[:500]
        decision.llm_calls = [_summary(r) for r in self.client.log.since(calls_before)]
        return _finish(decision, memory, started)

    def _dialog(
        self, situation: Situation, memory: SessionMemory, seed: int, decision: Decision
    ) -> None:
        dialog = situation.state.dialog
        if dialog.choice_shown:
            on_screen = (
                "A yes/no question is on screen: option 0 = yes, option 1 = no; the cursor is on "
                f"option {dialog.selection}. Answer with action 'choose' and the option."
            )
        else:
            on_screen = "No question is on screen. Answer with action 'advance'."
        prompt = (
            f"A dialog box is open. {on_screen}\nLink has {situation.state.rupees} rupees; "
            f"a heart container in the shop costs {SHOP_PRICE}.\nRecent:\n{memory.prompt_lines()}"
        )

        def check(answer: DialogAnswer) -> str | None:
            if dialog.choice_shown and answer.action != "choose":
                return "a question is on screen: use action 'choose' with option 0 or 1"
            if not dialog.choice_shown and answer.action != "advance":
                return "no question is on screen: use action 'advance'"
            return None

        result = self.client.ask("dialog", _messages(prompt), DialogAnswer, seed=seed, check=check)
        value = result.value
        decision.macro = (
            Choose(option=value.option) if value.action == "choose" else AdvanceDialog()
        )
        decision.reason = f"/dialog answered {value.model_dump_json()}"

    def _puzzle(
        self, situation: Situation, memory: SessionMemory, seed: int, decision: Decision
    ) -> None:
        tiles, link = situation.tile_tuple(), link_cell(situation)
        blocks = find_tiles(tiles, Metatile.BLOCK)
        block = min(blocks, key=lambda c: abs(c[0] - link[0]) + abs(c[1] - link[1]))
        safe = safe_pushes(tiles, link, block)
        if not safe:
            decision.reason = f"no push of the block at {block} can still solve the puzzle"
            return
        prompt = (
            "Push the block B onto the plate P to open the gate G. Room (# solid, . floor, "
            f"L Link):\n{room_picture(situation)}\nThe block is at x={block[0]}, y={block[1]}; "
            f"y grows downward. Pushes that keep the puzzle solvable: {', '.join(safe)}.\n"
            f"Recent:\n{memory.prompt_lines()}\nWhich direction do you push the block?"
        )

        def check(answer: PuzzleAnswer) -> str | None:
            problem = push_problem(tiles, link, block, answer.direction)
            if problem is None and answer.direction not in safe:
                problem = f"pushing {answer.direction} leaves the block where it can never reach the plate"
            return f"{problem}; choose one of: {', '.join(safe)}" if problem else None

        result = self.client.ask("puzzle", _messages(prompt), PuzzleAnswer, seed=seed, check=check)
        decision.macro = PushBlock(direction=result.value.direction)
        decision.reason = f"/puzzle answered {result.value.model_dump_json()}"

    def _state_prompt(self, situation: Situation, memory: SessionMemory) -> str:
        state = situation.state
        sword = bool(state.inventory.items & (1 << InventoryItem.SWORD))
        return (
            f"Link is {'indoors' if state.room.indoor else 'outdoors'} in room "
            f"{state.room.room}, holds {'a sword' if sword else 'no sword'}, {state.keys} keys, "
            f"{state.rupees} rupees. Goals in order: {'; '.join(OBJECTIVES)}.\n"
            f"Recent:\n{memory.prompt_lines()}\nWhat is Link's next goal?"
        )

    def _vision(self, frame_png: bytes, seed: int) -> dict[str, Any]:
        data = base64.b64encode(frame_png).decode()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What does this game screen show?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
                ],
            },
        ]
        try:
            answer = self.client.ask("vision", messages, VisionAnswer, seed=seed)
        except LlmError as error:
            return {"error": str(error)[:300]}
        return answer.value.model_dump()


BACKENDS = ("rules", "local", "llm-d")
LOCAL_MODEL = "smollm2-135m-instruct"


def make_backend(
    kind: str,
    *,
    base_url: str = "",
    models: dict[str, str] | None = None,
    timeout_s: float = 30.0,
    attempts: int = 4,
    vision: bool = False,
    log: CallLog | None = None,
    temperature: float | None = None,
    api_key: str = "",
) -> RulesBackend | LlmBackend:
    """`rules`; `local` (the local model server, one model on every route, text only); or
    `llm-d` (the gateway at `base_url`, a model name per route in `models`). `api_key`: the
    bearer token the server wants (llm-local's token when it has one)."""
    if kind == "rules":
        return RulesBackend()
    if kind not in BACKENDS:
        raise ValueError(f"backend {kind!r} is unknown; use one of {', '.join(BACKENDS)}")
    if kind == "local":
        base_url = base_url or "http://127.0.0.1:8090"
        models = dict.fromkeys(TEXT_ROUTES, LOCAL_MODEL)
        vision = False
        # At temperature 0 a 135M model repeats one wrong answer forever; sampled answers
        # with per-request seeds stay reproducible and let the repair round differ.
        temperature = 0.7 if temperature is None else temperature
    if not base_url:
        raise ValueError("the llm-d backend needs the gateway's base URL (llm_base_url)")
    if not models:
        raise ValueError("the llm-d backend needs a model name per route (dialog, puzzle, ...)")
    routes = {
        route: RouteSettings(model=model, timeout_s=timeout_s, temperature=temperature or 0.0)
        for route, model in models.items()
    }
    client = LlmClient(
        base_url, routes, retry=RetryPolicy(attempts=attempts), log=log, api_key=api_key or None
    )
    return LlmBackend(client, name=kind, vision=vision)
