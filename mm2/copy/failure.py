"""How a copy task's error crosses Spark: its kind, retriable flag and message, as data.

A Python exception in a Spark task reaches the driver only as the text of a Py4J error. So a
copy task that ends with an error raises a CopyTaskFailed whose message is the failure encoded
as JSON between two markers; the planner finds the last such block in the job's error and
raises the class of mm2's error tree that the kind names (mm2.errors.error_class). Nothing is
guessed from a class name in a traceback.

>>> failure = CopyFailure.of(ValueError("boom"))
>>> CopyFailure.find("Py4JJavaError ... " + str(CopyTaskFailed(failure)) + " ...") == failure
True
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from mm2.errors import MM2Error, error_class

__all__ = ["CopyFailure", "CopyTaskFailed"]

_BEGIN = "<mm2-copy-failure>"
_END = "</mm2-copy-failure>"
# A Python exception's last line in a traceback, for failures outside a copy task's run (a
# module an executor cannot import, a worker that died): only to show an operator the cause.
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception): .+$")


@dataclass(frozen=True)
class CopyFailure:
    """Why a copy task ended: `kind` is an mm2.errors kind ("error" for anything else)."""

    kind: str
    retriable: bool
    message: str
    operator: bool = False

    @classmethod
    def of(cls, exc: BaseException) -> CopyFailure:
        if isinstance(exc, MM2Error):
            return cls(exc.kind, exc.retriable, str(exc), exc.operator)
        return cls("error", False, f"{type(exc).__name__}: {exc}")

    def encode(self) -> str:
        return _BEGIN + json.dumps(asdict(self), sort_keys=True) + _END

    @classmethod
    def find(cls, text: str) -> CopyFailure | None:
        """The last failure encoded in `text` (a Spark job's error), if any."""
        end = text.rfind(_END)
        begin = text.rfind(_BEGIN, 0, end)
        if begin < 0 or end < 0:
            return None
        try:
            raw = json.loads(text[begin + len(_BEGIN) : end])
            return cls(
                str(raw["kind"]),
                bool(raw["retriable"]),
                str(raw["message"]),
                bool(raw.get("operator", False)),
            )
        except (ValueError, KeyError, TypeError):
            return None

    @classmethod
    def of_spark(cls, text: str) -> CopyFailure:
        """The failure a Spark job's error carries, or, when no copy task encoded one (it
        failed before its run began), the job's failure with the Python exception it names."""
        found = cls.find(text)
        if found is not None:
            return found
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        named = [line for line in lines if _EXCEPTION_LINE.match(line)]
        shown = [line for line in named if not line.startswith(("py4j.", "org.apache."))]
        message = (shown or named or lines or ["(no message)"])[-1]
        return cls("spark", False, message)

    def error(self) -> MM2Error:
        """The error to raise on the driver: the class the kind names, with the message."""
        cls = error_class(self.kind)
        try:
            made = cls(self.message)
        except TypeError:  # a class whose constructor wants more than a message
            made = MM2Error(self.message)
        made.retriable = self.retriable
        return made


class CopyTaskFailed(Exception):
    """Raised in the Spark task: its text carries the encoded failure to the driver."""

    def __init__(self, failure: CopyFailure) -> None:
        super().__init__(failure.encode())
        self.failure = failure
