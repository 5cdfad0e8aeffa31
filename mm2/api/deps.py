"""What the routers get from the app: the runtime view they translate HTTP into calls on."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request

from mm2.runtime.mirror_maker import MirrorMaker

__all__ = ["Mirror"]


def _mirror(request: Request) -> MirrorMaker:
    return cast(MirrorMaker, request.app.state.mirror)


Mirror = Annotated[MirrorMaker, Depends(_mirror)]
