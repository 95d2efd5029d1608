"""Go-Explore restarts: episodes start from frontier cells of a shared archive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.env.zelda import progress_level
from koholint.explore.archive import Archive, Cell, CellRecord
from koholint.game import fastpath

Frontier = tuple[bytes, int, float]


class ArchiveSource(Protocol):
    """Where an env sends the cells it found and gets frontier states from (local or shared)."""

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None: ...

    def frontier(self, seed: int) -> Frontier | None:
        """A cell to restart from: its state, and the steps and return that reached it."""
        ...

    def known(self) -> dict[Cell, int]:
        """The fewest steps known to reach each cell (what a new state must beat). A source
        may return the same dict again when it has learnt nothing new (never mutated)."""
        ...


def _constant(state: bytes) -> Callable[[], bytes]:
    return lambda: state


class LocalArchiveSource:
    """An ArchiveSource over an Archive in this process."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive

    def merge(self, cells: list[tuple[CellRecord, bytes]]) -> None:
        for record, state in cells:
            self.archive.observe(record.cell, record.steps, record.episode_return, _constant(state))

    def frontier(self, seed: int) -> Frontier | None:
        if not len(self.archive):
            return None
        record = self.archive.select(np.random.default_rng(seed))
        return self.archive.state(record), record.steps, record.episode_return

    def known(self) -> dict[Cell, int]:
        return self.archive.best_steps()


class GoExploreWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Records the best state per cell (room, tile bin, progress level) and, every
    `restart_every` episodes, starts the episode from a frontier cell instead of the
    configured start.

    A restarted episode counts its steps and return from the frontier cell's, so a cell is
    never credited as reached faster than it really was. Saving a state is slow (PyBoy,
    ~16 ms), so a state is saved only for a cell that neither this env nor the shared
    archive knows, or that this step reaches at least `improve_by` steps sooner than known
    (small shortcuts are not worth 16 ms, and early in training they come every few steps).
    Every `sync_every` steps and at episode ends the env sends its improvements to the
    source and learns what the other envs found, so envs do not each save the same cells;
    envs stepped in one process may share `known` (cell -> fewest steps) to learn of each
    other's saves at once."""

    def __init__(
        self,
        env: gym.Env[np.ndarray, Any],
        source: ArchiveSource,
        *,
        restart_every: int = 4,
        improve_by: int = 8,
        sync_every: int = 128,
        known: dict[Cell, int] | None = None,
    ) -> None:
        super().__init__(env)
        if restart_every < 1:
            raise ValueError(f"restart_every {restart_every} must be >= 1 (1 = every episode)")
        if improve_by < 1 or sync_every < 1:
            raise ValueError(f"improve_by {improve_by} and sync_every {sync_every} must be >= 1")
        self.improve_by = improve_by
        self.sync_every = sync_every
        self.source = source
        self.restart_every = restart_every
        self._episodes = 0
        # Shared (and updated in place) by the envs of a process when given: one env's save
        # is known to its neighbours at once, not a sync later (they start in the same place).
        self._known: dict[Cell, int] = known if known is not None else {}
        self._improved = Archive()
        self._steps = 0
        self._return = 0.0
        self.restarted = False
        self._room_flags: Any = None
        self._room_flags_pyboy: Any = None
        self._game: Any = env.unwrapped  # the ZeldaEnv, looked up once (not per step)
        self._synced_known: Any = None

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self._sync()
        self._episodes += 1
        self.restarted = False
        options = dict(kwargs.pop("options", None) or {})
        if self._episodes % self.restart_every == 0 and "start_state" not in options:
            seed = int(self.np_random.integers(0, 2**31 - 1))
            frontier = self.source.frontier(seed)
            if frontier is not None:
                options["start_state"], steps, episode_return = frontier
                self.restarted = True
        observation, info = self.env.reset(options=options, **kwargs)
        self._steps, self._return = (steps, episode_return) if self.restarted else (0, 0.0)
        info["go_explore_restart"] = self.restarted
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._return += float(reward)
        game = self._game
        raw = game.raw_state
        cell = (*info["cell"], progress_level(raw, self._room_flag_memory(game)))
        known = self._known.get(cell)
        better = known is None or self._steps <= known - self.improve_by
        # A state saved mid-transition would restart in the next room, not this cell.
        if better and not raw.transition:
            self._known[cell] = self._steps
            self._improved.observe(cell, self._steps, self._return, game.gameboy.save_state)
        if terminated or truncated:
            self._flush()
        elif self._steps % self.sync_every == 0:
            self._sync()
        return observation, reward, terminated, truncated, info

    def _room_flag_memory(self, game: Any) -> Any:
        """Where progress_level reads the room flags: PyBoy's work RAM directly on the fast
        path (one copy: ~1 us instead of ~30 us for 512 bytes through ``pyboy.memory``),
        else None (the memory the state was read from)."""
        pyboy = game.gameboy._pyboy  # a power-on reset makes a new emulator
        if self._room_flags_pyboy is not pyboy:
            self._room_flags_pyboy = pyboy
            self._room_flags = (
                fastpath.work_ram_slices(pyboy, banked=game.gameboy.rom.cgb)
                if getattr(game, "fast_path", False)
                else None
            )
        return self._room_flags

    def _sync(self) -> None:
        """Flush, then learn the fewest steps the source knows for each cell."""
        self._flush()
        known = self.source.known()
        if known is self._synced_known:  # a source may hand out the same answer again
            return
        self._synced_known = known
        for cell, steps in known.items():
            if steps < self._known.get(cell, steps + 1):
                self._known[cell] = steps

    def _flush(self) -> None:
        """Send the cells this env improved since the last flush (with their states) to the source."""
        if not len(self._improved):
            return
        cells = [(record, self._improved.state(record)) for record in self._improved.cells.values()]
        self.source.merge(cells)
        self._improved = Archive()
