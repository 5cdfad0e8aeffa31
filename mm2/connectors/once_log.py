"""The log of a sync that runs every few seconds: each problem logged once per distinct message,
failed Kafka calls tried again next interval, and a pass with many failures summed up in one line
(the first pass over a thousand source topics must not log a thousand warnings)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TypeVar

from mm2.errors import AuthenticationError, KafkaClientError

__all__ = ["DETAILED_CHANGES", "OnceLog"]

_R = TypeVar("_R")

# A pass that changes or fails on more topics than this logs one summary line, not one each.
DETAILED_CHANGES = 5


class OnceLog:
    """Warnings of one flow's sync, each logged once until its message changes or is forgotten."""

    def __init__(self, flow: str, log: logging.Logger) -> None:
        self.flow = flow
        self.log = log
        self._warned: dict[str, str] = {}

    def warn(self, key: str, message: str) -> None:
        if self._warned.get(key) != message:
            self._warned[key] = message
            self.log.warning("%s: %s", self.flow, message)

    def forget(self, key: str) -> None:
        """The problem under `key` is over: a new one is logged again."""
        self._warned.pop(key, None)

    def failed(self, exc: KafkaClientError, key: str, what: str, result: _R) -> _R:
        """A failed call: `what: exc` logged once under `key` (it is tried again next interval)
        and `result` returned. A cluster that refuses our credentials is raised instead: only a
        person can fix that, so the task must say it (FAILED) rather than log."""
        _raise_if_credentials(exc)
        self.warn(key, f"{what}: {exc}")
        return result

    def passed_over(self, exc: KafkaClientError, what: str, result: _R) -> _R:
        """A failed call that a fallback covers: `what: exc` at DEBUG only, and `result`; a
        cluster that refuses our credentials is raised, as in failed()."""
        _raise_if_credentials(exc)
        self.log.debug("%s: %s: %s", self.flow, what, exc)
        return result

    def warn_each(self, kind: str, what: str, failures: Mapping[str, str]) -> None:
        """warn() for each topic's failure; when many are new in one pass, one line for them."""
        messages = {t: f"{what} {t}: {e}" for t, e in failures.items()}
        fresh = {t: m for t, m in messages.items() if self._warned.get(f"{kind}:{t}") != m}
        if len(fresh) <= DETAILED_CHANGES:
            for topic, message in fresh.items():
                self.warn(f"{kind}:{topic}", message)
            return
        self._warned.update({f"{kind}:{t}": m for t, m in fresh.items()})
        errors = sorted({failures[t] for t in fresh})
        more = f" (and {len(errors) - 1} other errors)" if len(errors) > 1 else ""
        shown = ", ".join(list(fresh)[:DETAILED_CHANGES])
        self.log.warning(
            "%s: %s %d topics (%s, ...): %s%s", self.flow, what, len(fresh), shown, errors[0], more
        )


def _raise_if_credentials(exc: KafkaClientError) -> None:
    if isinstance(exc, AuthenticationError):
        raise exc
