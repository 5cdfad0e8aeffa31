"""What the routers get from the app: the runtime view they translate HTTP into calls on."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request

from mm2.runtime.view import RuntimeView

__all__ = ["Mirror"]


def _mirror(request: Request) -> RuntimeView:
    return cast(RuntimeView, request.app.state.mirror)


Mirror = Annotated[RuntimeView, Depends(_mirror)]
