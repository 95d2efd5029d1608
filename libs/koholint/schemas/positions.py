"""The ``koholint.positions`` event: where one environment's Link is, published every N steps.

Trainer envs (through ``koholint.env.wrappers.PositionPublisherWrapper``) and env-sim sessions
publish it; the console relays it to browsers. The stream is capped and lossy by design: a live
view, not a record. Envs build the event as a plain dict (``position_event``) on the hot path;
``PositionEvent`` is the contract that readers validate against.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

POSITIONS_SCHEMA_VERSION: Literal[1] = 1
SOURCES = ("trainer", "env-sim", "bench")
NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
# Live frames of a trainer env, on demand: the console sets the watch key (with a short TTL)
# while a browser watches; the env's publisher then keeps the frame key (PNG, short TTL) fresh.
WATCH_TTL_SECONDS = 5
FRAME_TTL_SECONDS = 10
# The planner's takeovers of an env (hybrid control): the newest few, kept a while, so that a
# browser watching the env sees the latest ones beside its frames.
MAX_TAKEOVERS = 20
TAKEOVERS_TTL_SECONDS = 600
MAX_TAKEOVER_DECISIONS = 16


def watch_key(run: str, env: str) -> str:
    return f"koholint.watch.{run}.{env}"


def frame_key(run: str, env: str) -> str:
    return f"koholint.frame.{run}.{env}"


def takeovers_key(run: str, env: str) -> str:
    """A Redis list of the env's PlannerTakeover records, newest first (capped, with a TTL)."""
    return f"koholint.takeovers.{run}.{env}"


class PositionEvent(BaseModel):
    """One environment's position at one step."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = POSITIONS_SCHEMA_VERSION
    source: Literal["trainer", "env-sim", "bench"] = Field(description="who runs the env")
    run: str = Field(
        pattern=NAME_PATTERN, description="the training run, or 'env-sim' for sessions"
    )
    env: str = Field(
        pattern=NAME_PATTERN, description="the env within the run, or the env-sim session id"
    )
    indoor: int = Field(ge=0, le=1, description="wIsIndoor: 0 overworld, 1 indoor")
    map: int = Field(ge=0, le=255, description="hMapId (indoor map)")
    room: int = Field(ge=0, le=255, description="hMapRoom")
    x: int = Field(ge=0, le=255, description="Link's pixel x in the room")
    y: int = Field(ge=0, le=255, description="Link's pixel y in the room")
    progress: int = Field(ge=0, description="items held plus small keys (progress level)")
    episode_step: int = Field(ge=0, description="steps since the episode's reset")
    rooms: int = Field(ge=0, description="distinct rooms this episode")
    sent_at: float = Field(description="unix time of the step, for end-to-end lag")

    @property
    def room_key(self) -> tuple[int, int, int]:
        return (self.indoor, self.map, self.room)


class PlannerDecision(BaseModel):
    """One decision of the planner during a takeover, and what its macro did."""

    model_config = ConfigDict(extra="forbid")

    mode: str = Field(max_length=32, description="title, dialog or puzzle")
    backend: str = Field(max_length=64, description="who decided (rules, llm, ...)")
    macro: str | None = Field(max_length=32, description="the macro's kind; null: no decision")
    reason: str = Field(max_length=500, description="the backend's reason")
    ok: bool | None = Field(description="whether the macro did what it meant; null: not run")
    result: str | None = Field(max_length=300, description="the macro's own account")
    frames: int = Field(ge=0, description="frames the macro ran")


class PlannerTakeover(BaseModel):
    """One time the switch fired on an env: the planner's decisions until control came back."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = POSITIONS_SCHEMA_VERSION
    run: str = Field(pattern=NAME_PATTERN)
    env: str = Field(pattern=NAME_PATTERN)
    episode_step: int = Field(ge=0, description="the env's episode step when control came back")
    started_in: str = Field(max_length=32, description="the mode the switch fired in")
    stopped: str = Field(max_length=32, description="why the planner stopped (cleared, budget…)")
    macros: int = Field(ge=0)
    frames: int = Field(ge=0)
    decisions: list[PlannerDecision] = Field(max_length=MAX_TAKEOVER_DECISIONS)
    sent_at: float = Field(description="unix time of the step")


def position_event(
    source: str,
    run: str,
    env: str,
    room_key: tuple[int, int, int],
    x: int,
    y: int,
    *,
    progress: int,
    episode_step: int,
    rooms: int,
) -> dict[str, Any]:
    """A PositionEvent as plain data: what an env builds per published step (no pydantic)."""
    indoor, map_id, room = room_key
    return {
        "schema_version": POSITIONS_SCHEMA_VERSION, "source": source, "run": run, "env": env,
        "indoor": int(indoor), "map": int(map_id), "room": int(room), "x": int(x), "y": int(y),
        "progress": int(progress), "episode_step": int(episode_step), "rooms": int(rooms),
        "sent_at": time.time(),
    }  # fmt: skip


def schema_files() -> list[tuple[Path, str]]:
    """(checked-in path, current text) of the PositionEvent and PlannerTakeover JSON Schemas."""
    folder = Path(str(resources.files("koholint") / "schemas"))
    return [
        (folder / name, json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
        for name, model in (
            ("position_event.schema.json", PositionEvent),
            ("planner_takeover.schema.json", PlannerTakeover),
        )
    ]
