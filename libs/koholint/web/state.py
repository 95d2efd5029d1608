"""Dependencies that hand a route what the service's lifespan put on ``app.state``.

    SessionsDep = Annotated[SessionManager, from_state("sessions")]

One generic getter instead of a hand-written one per object; the alias names the type, so
handlers and type checkers see the object's real type.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Request


def from_state(name: str) -> Any:
    """``Depends`` on ``app.state.<name>``, the object the lifespan made at start."""

    async def from_app_state(request: Request) -> Any:  # async: no threadpool hop per request
        return getattr(request.app.state, name)

    from_app_state.__name__ = f"app_state_{name}"
    return Depends(from_app_state)
