"""Recorded episodes as JSONL, and deterministic replay that checks the RAM at every step.

A trajectory file holds a header (env settings, start state, seed, ROM), one line per
step (the chosen action, the applied action, the reward and a hash of all of RAM) and a
summary. ``replay`` rebuilds the env from the header, feeds the same actions and compares
the RAM hash after every step; the first differing step is reported.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from koholint.env.zelda import EnvConfig, ZeldaEnv

TRAJECTORY_SCHEMA_VERSION = 1
MAX_TRAJECTORY_STEPS = 1_000_000
WRAM, HRAM = (0xC000, 0xE000), (0xFF80, 0xFFFF)


class TrajectoryError(ValueError):
    """A trajectory file that cannot be replayed; the message says why."""


def ram_hash(env: ZeldaEnv) -> str:
    """SHA-1 of work RAM and high RAM: the whole game state the cartridge keeps."""
    memory = env.gameboy.memory
    digest = hashlib.sha1(bytes(memory[WRAM[0] : WRAM[1]]))
    digest.update(bytes(memory[HRAM[0] : HRAM[1]]))
    return digest.hexdigest()


def config_to_json(config: EnvConfig) -> dict[str, Any]:
    settings = config.model_dump()
    start = config.start_state
    if isinstance(start, bytes | bytearray):
        settings["start_state"] = {"base64": base64.b64encode(start).decode()}
    elif callable(start):
        raise TrajectoryError(
            "a trajectory cannot record a callable start state; pass the state bytes"
        )
    return settings


def config_from_json(settings: dict[str, Any]) -> EnvConfig:
    settings = dict(settings)
    start = settings.get("start_state")
    if isinstance(start, dict):
        settings["start_state"] = base64.b64decode(start["base64"])
    return EnvConfig.parse(settings)


class TrajectoryWriter:
    """Writes one episode; call ``step`` after every env step and ``close`` at the end."""

    def __init__(
        self, path: Path, env: ZeldaEnv, *, seed: int, policy: str, planner: str | None = None
    ) -> None:
        """`planner`: the backend of the hybrid control the episode ran under ('rules'), if any."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("w")
        self._env = env
        self._write(
            {
                "type": "header",
                "schema_version": TRAJECTORY_SCHEMA_VERSION,
                "policy": policy,
                "seed": seed,
                "rom_sha256": env.gameboy.rom.sha256,
                "env_config": config_to_json(env.config),
                "ram_sha1": ram_hash(env),
                **({"planner": planner} if planner else {}),
            }
        )

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def step(self, t: int, action: int, reward: float, info: dict[str, Any]) -> None:
        self._write(
            {"type": "step", "t": t, "action": action, "applied": info["action"],
             "reward": round(float(reward), 6), "room": list(info["room_key"]),
             "ram_sha1": ram_hash(self._env)}
        )  # fmt: skip

    def close(self, summary: dict[str, Any]) -> None:
        self._write({"type": "summary", **summary})
        self._file.close()


@dataclass(frozen=True)
class ReplayResult:
    steps: int
    first_mismatch: int | None  # step index (1-based) of the first differing RAM hash
    expected: str | None = None
    actual: str | None = None

    @property
    def ok(self) -> bool:
        return self.first_mismatch is None


def _read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        raise TrajectoryError(f"{path}: cannot read a JSONL trajectory ({error})") from error
    if not lines or lines[0].get("type") != "header":
        raise TrajectoryError(f"{path}: the first line must be the trajectory header")
    header = lines[0]
    if header.get("schema_version") != TRAJECTORY_SCHEMA_VERSION:
        raise TrajectoryError(
            f"{path}: schema_version {header.get('schema_version')} is not {TRAJECTORY_SCHEMA_VERSION}"
        )
    steps = [line for line in lines if line.get("type") == "step"]
    if len(steps) > MAX_TRAJECTORY_STEPS:
        raise TrajectoryError(f"{path}: {len(steps)} steps exceed {MAX_TRAJECTORY_STEPS}")
    return header, steps


def replay(path: Path) -> ReplayResult:
    """Re-run a recorded trajectory and compare the RAM hash after every step."""
    header, steps = _read(Path(path))
    from koholint.env.factory import make_env

    player = make_env(config_from_json(header["env_config"]),
                      planner=_recorded_planner(header.get("planner"), path))  # fmt: skip
    env: ZeldaEnv = player.unwrapped  # type: ignore[assignment]
    try:
        if env.gameboy.rom.sha256 != header["rom_sha256"]:
            raise TrajectoryError(
                f"{path}: recorded on ROM {header['rom_sha256'][:12]}..., not this one"
            )
        player.reset(seed=header["seed"])
        if ram_hash(env) != header["ram_sha1"]:
            return ReplayResult(0, 0, header["ram_sha1"], ram_hash(env))
        for record in steps:
            player.step(record["action"])
            actual = ram_hash(env)
            if actual != record["ram_sha1"]:
                return ReplayResult(len(steps), record["t"], record["ram_sha1"], actual)
        return ReplayResult(len(steps), None)
    finally:
        env.close()


def _recorded_planner(planner: str | None, path: Path) -> str | None:
    """The planner the trajectory was recorded under, when it replays deterministically."""
    if planner not in (None, "rules"):
        raise TrajectoryError(
            f"{path}: recorded under the {planner!r} planner; only 'rules' replays deterministically"
        )
    return planner
