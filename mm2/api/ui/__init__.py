"""The web page at /ui: flows with the buttons that apply to each (pause, resume, restart),
lag and throughput over the last hour (kept by the process: mm2.api.history), per flow its
partitions worst first and its consumer groups with their failover readiness, tasks, recent
errors. Plain HTML, CSS and JavaScript shipped in the package (no CDN), reading the same REST
API any client reads, behind the same authentication."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS", "assets", "router"]

ASSETS = Path(__file__).parent / "static"
router = APIRouter(tags=["ui"], include_in_schema=False)


@router.get("/ui")
def page() -> FileResponse:
    return FileResponse(ASSETS / "index.html", media_type="text/html")


@router.get("/ui/")
def page_slash() -> RedirectResponse:
    return RedirectResponse("/ui")


def assets() -> StaticFiles:
    """Mounted at /ui/assets."""
    return StaticFiles(directory=ASSETS)
