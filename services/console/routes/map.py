"""/v1/map: the rooms of the ROM, rendered once from the ROM and cached."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from starlette.concurrency import run_in_threadpool

from console.deps import MapDep
from console.worldmap import room_name
from koholint.web.problems import NotFoundError, problem_responses

router = APIRouter(prefix="/v1/map", tags=["map"])


@router.get("")
async def get_map(cache: MapDep) -> dict[str, Any]:
    """The ROM's rooms (key, indoor, map, room, image URL) and the room size in pixels."""
    world = await run_in_threadpool(cache.get)
    return world.describe()


@router.get(
    "/rooms/{key}.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}, **problem_responses(404)},
)
async def get_room_image(
    key: Annotated[str, Path(pattern=r"^[01]-[0-9]{1,3}-[0-9]{1,3}$")], cache: MapDep
) -> Response:
    """One room as the game draws it (160x128, no sprites)."""
    world = await run_in_threadpool(cache.get)
    images = {room_name(room): png for room, png in world.rooms.items()}
    if key not in images:
        raise NotFoundError(f"no room {key!r} on this ROM's map; GET /v1/map lists them")
    return Response(images[key], media_type="image/png", headers={"cache-control": "max-age=3600"})
