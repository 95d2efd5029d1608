"""/v1/roms: the ROMs sessions may run."""

from __future__ import annotations

from fastapi import APIRouter, Request

from env_sim.deps import RomsDep, SettingsDep
from env_sim.roms import require_uploads_enabled
from koholint.schemas.env_sim import RomInfo, RomList
from koholint.web.auth import ControlDep
from koholint.web.problems import problem_responses

router = APIRouter(prefix="/v1/roms", tags=["roms"])


@router.get("")
async def list_roms(roms: RomsDep) -> RomList:
    """The bundled cartridge, the operator's ROM and uploads (id, title, sha256, source)."""
    return RomList(roms=roms.describe())


@router.post(
    "",
    status_code=201,
    dependencies=[ControlDep],
    responses=problem_responses(401, 403),
    openapi_extra={
        "requestBody": {
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
            "required": True,
        }
    },
)
async def upload_rom(request: Request, roms: RomsDep, settings: SettingsDep) -> RomInfo:
    """Upload a ROM (only when an operator turned uploads on): size-limited, header-checked."""
    require_uploads_enabled(settings.allow_rom_upload)
    return roms.upload(await request.body())
