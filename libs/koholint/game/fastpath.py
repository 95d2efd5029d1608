"""The compiled fast path, when it is built, and its pure-Python fallback.

``koholint.game._fastpath`` (Cython, built by ``python -m koholint.game.build_fastpath``,
which ``make setup`` runs) reads the env's RAM taps straight from PyBoy's arrays, encodes
the observation and the reward deltas in one C call, and writes save states into a C
buffer (PyBoy writes ~150 KB one byte at a time: ~15-20 ms through Python, ~0.5 ms here).
Without it, or when it was built against another PyBoy, everything here falls back to the
pure-Python reference path with identical results (tests compare them value for value).

>>> isinstance(COMPILED, bool)
True
"""

from __future__ import annotations

import io
import logging
from importlib.metadata import version
from typing import Any

from koholint.game.ram import ENEMY_TYPES, HAS_INSTRUMENT_BIT, EntityType, RamAddress

logger = logging.getLogger(__name__)


def _load_compiled() -> Any:
    try:
        from koholint.game import _fastpath  # type: ignore[attr-defined]
    except ImportError:
        return None
    installed = version("pyboy")
    if installed != _fastpath.PYBOY_VERSION:
        logger.warning(
            "koholint.game._fastpath was built for PyBoy %s, PyBoy %s is installed: using the "
            "pure-Python path (rebuild: python -m koholint.game.build_fastpath)",
            _fastpath.PYBOY_VERSION,
            installed,
        )
        return None
    return _fastpath


_compiled = _load_compiled()
COMPILED: bool = _compiled is not None
"""True when the compiled module is built for the installed PyBoy and in use."""

NPC_TYPES = frozenset({int(EntityType.ELDER), int(EntityType.SHOPKEEPER)})


def _table(members: frozenset[int] | set[int]) -> bytes:
    return bytes(1 if value in members else 0 for value in range(256))


def _tables() -> dict[str, Any]:
    """Lookup tables from the same sets the Python encoder uses (one source of truth)."""
    from koholint.game.tiles import PICKUPS, SOLID, STAIRS, Metatile

    return {
        "solid": _table({int(tile) for tile in SOLID}),
        "pickup": _table({int(tile) for tile in PICKUPS}),
        "stairs": _table({int(tile) for tile in STAIRS}),
        "enemy": _table({int(kind) for kind in ENEMY_TYPES}),
        "npc": _table(NPC_TYPES),
        "chest": int(Metatile.CHEST),
        "block": int(Metatile.BLOCK),
        "locked_door": int(Metatile.LOCKED_DOOR),
    }


def taps(pyboy: Any) -> Any | None:
    """The compiled RAM taps bound to this PyBoy, or None without the compiled module."""
    if _compiled is None:
        return None
    addresses = {member.name: int(member) for member in RamAddress}
    return _compiled.Taps(pyboy, addresses, _tables(), HAS_INSTRUMENT_BIT)


WORK_RAM_START, WORK_RAM_END = 0xC000, 0xE000


class WorkRamSlices:
    """Reads slices of C000-DFFF straight from PyBoy's work RAM array, as ``pyboy.memory``
    does on a monochrome ROM (one copy instead of a Python-level call per byte)."""

    def __init__(self, work_ram: memoryview) -> None:
        self._work_ram = work_ram

    def __getitem__(self, key: slice) -> bytes:
        if not (
            isinstance(key, slice)
            and key.step is None
            and WORK_RAM_START <= key.start <= key.stop <= WORK_RAM_END
        ):
            raise IndexError(f"only plain slices of C000-DFFF are read here, not {key!r}")
        return bytes(self._work_ram[key.start - WORK_RAM_START : key.stop - WORK_RAM_START])


def work_ram_slices(pyboy: Any, *, banked: bool) -> WorkRamSlices | None:
    """Fast slices of work RAM for a monochrome ROM; None on colour ROMs (banked D000-DFFF
    follows the game's bank switch there) or without the compiled module."""
    if _compiled is None or banked:
        return None
    return WorkRamSlices(_compiled.work_ram(pyboy))


def save_state(pyboy: Any, *, compiled: bool = True) -> bytes:
    """The bytes of ``pyboy.save_state``; through the C buffer when built (``compiled``)."""
    if compiled and _compiled is not None:
        return bytes(_compiled.save_state(pyboy))
    buffer = io.BytesIO()
    pyboy.save_state(buffer)
    return buffer.getvalue()


def load_state(pyboy: Any, payload: bytes, *, compiled: bool = True) -> None:
    """``pyboy.load_state`` from bytes; through the C reader when built (``compiled``)."""
    if compiled and _compiled is not None:
        _compiled.load_state(pyboy, payload)
    else:
        pyboy.load_state(io.BytesIO(payload))
