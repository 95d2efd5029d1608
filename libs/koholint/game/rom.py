"""Game Boy ROM files: header checks, identity (sha256) and the bundled test cartridge.

>>> info = read_rom(bundled_cartridge())
>>> info.title
'KOHOLINT'
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from koholint.game.worlds import MAGIC, REGION_ADDRESS

HEADER_END = 0x150
TITLE_START, TITLE_END = 0x134, 0x143
CGB_FLAG = 0x143
CARTRIDGE_TYPE = 0x147
HEADER_CHECKSUM = 0x14D
ROM_BANK_SIZE = 0x4000
MAX_ROM_SIZE = 8 * 1024 * 1024  # the largest MBC5 cartridge
ROM_ENV_VARIABLE = "KOHOLINT_ROM"


class InvalidRomError(ValueError):
    """A file that is not a usable Game Boy ROM; the message names the file and the problem."""


@dataclass(frozen=True)
class RomInfo:
    path: Path
    title: str
    sha256: str
    size: int
    cartridge_type: int
    cgb: bool
    engine: bool = False
    """the Koholint engine with a world in its world region (the bundled cartridge or a
    generated world): it reads the episode's seed from RAM and has the opening's states"""

    @property
    def is_bundled_cartridge(self) -> bool:
        return self.sha256 == bundled_cartridge_sha256()


def header_checksum(data: bytes) -> int:
    """The header checksum the boot ROM verifies (over 0x134-0x14C)."""
    checksum = 0
    for byte in data[TITLE_START:HEADER_CHECKSUM]:
        checksum = (checksum - byte - 1) & 0xFF
    return checksum


def validate_rom_bytes(data: bytes, name: str) -> None:
    """Raise InvalidRomError naming `name` unless `data` looks like a Game Boy ROM."""
    if len(data) < HEADER_END:
        raise InvalidRomError(f"{name}: {len(data)} bytes is too small for a Game Boy ROM header")
    if len(data) > MAX_ROM_SIZE:
        raise InvalidRomError(f"{name}: {len(data)} bytes is larger than any Game Boy cartridge")
    if len(data) % ROM_BANK_SIZE:
        raise InvalidRomError(
            f"{name}: size {len(data)} is not a multiple of 16 KiB; a Game Boy ROM is whole banks"
        )
    expected = header_checksum(data)
    if data[HEADER_CHECKSUM] != expected:
        raise InvalidRomError(
            f"{name}: bad header checksum 0x{data[HEADER_CHECKSUM]:02X} (expected 0x{expected:02X}); "
            "the file is not a Game Boy ROM or is corrupt"
        )


def read_rom(path: str | Path) -> RomInfo:
    """Validate a ROM file and describe it."""
    rom_path = Path(path)
    if not rom_path.is_file():
        raise InvalidRomError(f"{rom_path}: no such file; pass the path of a .gb or .gbc ROM")
    data = rom_path.read_bytes()
    validate_rom_bytes(data, str(rom_path))
    title = data[TITLE_START:TITLE_END].split(b"\x00")[0].decode("ascii", errors="replace")
    return RomInfo(
        path=rom_path,
        title=title.strip(),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        cartridge_type=data[CARTRIDGE_TYPE],
        cgb=bool(data[CGB_FLAG] & 0x80),
        engine=data[REGION_ADDRESS : REGION_ADDRESS + len(MAGIC)] == MAGIC,
    )


def bundled_cartridge() -> Path:
    """Path of the open test cartridge shipped with the package."""
    return Path(str(resources.files("koholint") / "data" / "cartridge.gb"))


_bundled_sha256: str | None = None


def bundled_cartridge_sha256() -> str:
    global _bundled_sha256
    if _bundled_sha256 is None:
        _bundled_sha256 = hashlib.sha256(bundled_cartridge().read_bytes()).hexdigest()
    return _bundled_sha256


WORLD_ROM_NAME = "cartridge.gb"
"""The ROM inside a world folder (``koholint cartridge generate --out DIR``)."""


def resolve_rom(path: str | Path) -> Path:
    """The checked ROM at `path` (a ROM file, or a world folder holding cartridge.gb), absolute."""
    candidate = Path(path).expanduser()
    if candidate.is_dir():
        candidate = candidate / WORLD_ROM_NAME
        if not candidate.is_file():
            raise InvalidRomError(
                f"{path}: a folder with no {WORLD_ROM_NAME}; pass a ROM file or a folder "
                "written by `koholint cartridge generate --out DIR`"
            )
    return read_rom(candidate.resolve()).path


def default_rom() -> Path:
    """The world this process plays when none is named: $KOHOLINT_ROM, else the cartridge."""
    configured = os.environ.get(ROM_ENV_VARIABLE)
    return resolve_rom(configured) if configured else bundled_cartridge()


@contextlib.contextmanager
def playing(rom: str | Path | None) -> Iterator[Path]:
    """Make `rom` this process's world (and its children's: Ray's workers, the explorer's
    processes inherit the environment) until the block ends; None keeps the current one."""
    if not rom:
        yield default_rom()
        return
    resolved = resolve_rom(rom)
    before = os.environ.get(ROM_ENV_VARIABLE)
    os.environ[ROM_ENV_VARIABLE] = str(resolved)
    try:
        yield resolved
    finally:
        if before is None:
            os.environ.pop(ROM_ENV_VARIABLE, None)
        else:
            os.environ[ROM_ENV_VARIABLE] = before
