"""The ROMs a session may run: the bundled cartridge always, the operator's, the worlds in
the operator's worlds folder (``koholint cartridge generate`` output), uploads if enabled."""

from __future__ import annotations

import hashlib
from pathlib import Path

from koholint.game.rom import (
    WORLD_ROM_NAME,
    InvalidRomError,
    RomInfo,
    bundled_cartridge,
    read_rom,
    validate_rom_bytes,
)
from koholint.schemas.env_sim import CARTRIDGE_ROM_ID
from koholint.schemas.env_sim import RomInfo as RomInfoModel
from koholint.web.problems import (
    NotFoundError,
    PayloadTooLargeError,
    ProblemError,
    UnprocessableError,
)


class RomRegistry:
    def __init__(
        self,
        *,
        configured: str | None,
        upload_dir: Path,
        max_upload_bytes: int,
        worlds_dir: str = "",
    ) -> None:
        self._roms: dict[str, tuple[RomInfo, str]] = {}
        self._add(read_rom(bundled_cartridge()), "bundled")
        if configured:
            self._add(read_rom(configured), "configured")
        for path in world_roms(Path(worlds_dir)) if worlds_dir else []:
            self._add(read_rom(path), "world")
        self._upload_dir = upload_dir
        self._max_upload_bytes = max_upload_bytes

    def _add(self, info: RomInfo, source: str) -> None:
        self._roms[info.sha256] = (info, source)

    def resolve(self, rom_id: str) -> RomInfo:
        if rom_id == CARTRIDGE_ROM_ID:
            rom_id = next(sha for sha, (_, source) in self._roms.items() if source == "bundled")
        if rom_id not in self._roms:
            raise NotFoundError(f"no ROM {rom_id!r}; GET /v1/roms lists the ids", rom_id=rom_id)
        return self._roms[rom_id][0]

    def describe(self) -> list[RomInfoModel]:
        return [
            RomInfoModel(
                id=sha, title=info.title, sha256=sha, size=info.size, cgb=info.cgb, source=source
            )
            for sha, (info, source) in self._roms.items()
        ]

    def upload(self, data: bytes) -> RomInfoModel:
        """Check, hash and keep an uploaded ROM (the route checks uploads are enabled)."""
        if len(data) > self._max_upload_bytes:
            raise PayloadTooLargeError(
                f"ROM of {len(data)} bytes exceeds {self._max_upload_bytes}",
                limit_bytes=self._max_upload_bytes,
            )
        try:
            validate_rom_bytes(data, "uploaded ROM")
        except InvalidRomError as error:
            raise UnprocessableError(str(error)) from error
        sha = hashlib.sha256(data).hexdigest()
        if sha not in self._roms:
            self._upload_dir.mkdir(parents=True, exist_ok=True)
            path = self._upload_dir / f"{sha}.gb"
            path.write_bytes(data)
            self._add(read_rom(path), "uploaded")
        return next(rom for rom in self.describe() if rom.id == sha)


def require_uploads_enabled(enabled: bool) -> None:
    if not enabled:
        raise ProblemError(
            "ROM upload is off; an operator enables it with KOHOLINT_ENV_SIM_ALLOW_ROM_UPLOAD=true",
            status_code=403, title="Forbidden",
        )  # fmt: skip


MAX_WORLDS = 1000


def world_roms(folder: Path) -> list[Path]:
    """The worlds of an operator's folder: ``NAME/cartridge.gb`` (what ``koholint cartridge
    generate --out NAME`` writes) and ``*.gb`` files, sorted; a missing folder or one with more
    than MAX_WORLDS is a configuration error that names the setting."""
    if not folder.is_dir():
        raise InvalidRomError(
            f"KOHOLINT_ENV_SIM_WORLDS_DIR={folder}: no such folder; "
            "make one with `koholint cartridge generate --out DIR/NAME`"
        )
    found = sorted([*folder.glob(f"*/{WORLD_ROM_NAME}"), *folder.glob("*.gb")])
    if len(found) > MAX_WORLDS:
        raise InvalidRomError(
            f"KOHOLINT_ENV_SIM_WORLDS_DIR={folder}: {len(found)} ROMs, more than {MAX_WORLDS}"
        )
    return found
