"""``koholint play``'s settings, declared once: its flags, their help and the environment
variables ``KOHOLINT_PLAY_<FIELD>`` (the ROM's is ``KOHOLINT_ROM``) are derived from this model
(``koholint.flags``); a flag beats the variable, which beats the default."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from koholint.game.rom import ROM_ENV_VARIABLE

POLICIES = ("noop", "random", "walkthrough", "explorer")
CHECKPOINT_PREFIX = "checkpoint:"
MAX_EPISODES = 100
MAX_STEPS = 10_000_000
MAX_WORKERS = 64
"""processes playing a trained policy's episodes side by side, at most"""


def _policy(value: str) -> str:
    if value in POLICIES or (
        value.startswith(CHECKPOINT_PREFIX) and len(value) > len(CHECKPOINT_PREFIX)
    ):
        return value
    raise ValueError(
        f"{value!r}: choose {', '.join(POLICIES)} or checkpoint:PATH (a trainer checkpoint "
        "folder or a policy folder)"
    )


def _sticky(value: float | None) -> float | None:
    if value is not None and not 0.0 <= value < 1.0:
        raise ValueError(f"{value!r}: a probability, 0 <= p < 1 (training uses 0.25)")
    return value


def _workers(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"{value!r}: use 1..{MAX_WORKERS} processes")
    return value


class PlayCommandSettings(BaseModel):
    """Who plays, from where, how long; a trained policy's own settings beside them."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    environment_prefix: ClassVar[str] = "KOHOLINT_PLAY_"
    environment_names: ClassVar[dict[str, str]] = {"rom": ROM_ENV_VARIABLE}
    trained_only: ClassVar[tuple[str, ...]] = ("sticky", "planner", "export", "greedy", "workers")
    """the settings that apply to a trained policy (checkpoint:PATH) only"""

    policy: list[Annotated[str, AfterValidator(_policy)]] = Field(
        default_factory=lambda: ["walkthrough", "random"], min_length=1, max_length=16
    )
    """who plays: noop, random, walkthrough, explorer, or checkpoint:PATH, a trained policy (a
    trainer checkpoint folder, or a folder from koholint export-policy)"""
    episodes: int = Field(1, ge=1, le=MAX_EPISODES)
    """episodes per policy and start, one seed each"""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """the first episode's seed"""
    start: str = Field("start_of_play", min_length=1, max_length=4096)
    """a named save state, 'power_on' (or power-on), or 'all' for every named state; a trained
    policy also takes demo:<trajectory.actions>@<step>"""
    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS)
    """steps per episode (none: 25000, 100000 frames at frame skip 4; a trained policy: its
    training episode length)"""
    sticky: Annotated[float | None, AfterValidator(_sticky)] = None
    """trained policy: sticky-action probability (none: as trained)"""
    planner: Literal["rules", "off"] | None = None
    """trained policy: hybrid control (none: as trained)"""
    export: str | None = Field(None, max_length=4096)
    """trained policy: write each episode as a GIF, and play.json, into this folder"""
    greedy: bool | None = None
    """trained policy: take the most likely action (none: sample, as in training)"""
    workers: Annotated[int | None, AfterValidator(_workers)] = None
    """trained policy: processes playing episodes side by side (none: 1; each episode's seed
    fixes it, so the results are the same)"""
    out: str = Field("runs/play", max_length=4096)
    """folder for the baselines' JSONL trajectories"""
    rom: str | None = Field(None, max_length=4096)
    """a Game Boy ROM, or a world folder (`koholint cartridge generate --out`), instead of the
    cartridge"""
