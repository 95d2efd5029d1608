"""The page itself: one HTML file; its script and style are served from /static."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
router = APIRouter(tags=["page"])


@router.get("/", include_in_schema=False)
async def get_page() -> FileResponse:
    """The console page."""
    return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-cache"})
