"""What a management request can do wrong; the API layer maps each to one HTTP status.

MM2Error
├── NotFoundError (also LookupError)       unknown flow, connector, task or plugin   -> 404
├── ConflictError                          exists already, wrong state, ambiguous name -> 409
└── BadRequestError (also ValueError)      a config or body that cannot mean anything -> 400
"""

from __future__ import annotations

from collections.abc import Mapping

from mm2.errors import MM2Error

__all__ = ["BadRequestError", "ConflictError", "NotFoundError"]


class NotFoundError(MM2Error, LookupError):
    """No flow, connector, task or plugin of that name."""


class ConflictError(MM2Error):
    """The request does not fit the current state (exists, not stopped, ambiguous name)."""


class BadRequestError(MM2Error, ValueError):
    """Invalid input; `errors` maps each offending key to what is wrong with it."""

    def __init__(self, message: str, errors: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.errors: dict[str, list[str]] = {k: list(v) for k, v in (errors or {}).items()}
