"""The planner service's request bodies (API version v1); its answers are
``koholint.planning.backends.Decision`` and ``koholint.planning.autopilot.AutopilotReport``.

The service validates these and ``koholint.clients.planner`` sends them, so a field is
defined once for both sides.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from koholint.planning.view import Situation

PLANNER_SCHEMA_VERSION = 1
SESSION_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
MAX_FRAME_BASE64 = 256 * 1024
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
MAX_SEED = 2**31 - 1
MAX_AUTOPILOT_MACROS = 10_000
"""Macros per autopilot run at most; a server may set a lower limit (its spec then says so)."""
MAX_AUTOPILOT_FRAMES = 1_000_000


class DecideRequest(BaseModel):
    """A situation to decide on; `session` keys the planner's memory of earlier decisions."""

    model_config = ConfigDict(extra="forbid")

    situation: Situation
    session: str | None = Field(
        None, pattern=SESSION_PATTERN, description="memory key; none = no memory kept"
    )
    frame_png_base64: str | None = Field(
        None, max_length=MAX_FRAME_BASE64, pattern=BASE64_PATTERN,
        description="the screen as base64 PNG (for /vision)",
    )  # fmt: skip
    seed: int = Field(0, ge=0, le=MAX_SEED)


class AutopilotRequest(BaseModel):
    """The budget of one autopilot run on an env-sim session."""

    model_config = ConfigDict(extra="forbid")

    max_macros: int = Field(64, ge=1, le=MAX_AUTOPILOT_MACROS)
    max_frames: int = Field(20_000, ge=1, le=MAX_AUTOPILOT_FRAMES)
    seed: int = Field(0, ge=0, le=MAX_SEED)
