"""HTTP Basic authentication against the credentials Connect's PropertyFileLoginModule reads."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Mapping
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPBasic, HTTPBasicCredentials

__all__ = ["basic_auth"]

log = logging.getLogger(__name__)
_basic = HTTPBasic(auto_error=False, realm="mm2")


def basic_auth(credentials: Mapping[str, str]) -> Callable[..., None]:
    """A dependency that lets a request through only with a known user and its password."""
    users = {user.encode(): password.encode() for user, password in credentials.items()}

    def check(given: Annotated[HTTPBasicCredentials | None, Depends(_basic)]) -> None:
        if given is not None:
            expected = users.get(given.username.encode())
            # compare_digest against a dummy too: no timing hint whether the user exists
            ok = hmac.compare_digest(expected or b"\0", given.password.encode())
            if expected is not None and ok:
                return
            log.warning("REST: authentication failed for user %r", given.username)
        raise HTTPException(
            401,
            "Credentials are missing or wrong; use HTTP Basic authentication",
            headers={"WWW-Authenticate": 'Basic realm="mm2"'},
        )

    return check
