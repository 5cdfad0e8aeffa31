"""Typed reading of string settings as Kafka's ConfigDef parses them; errors name what is valid."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from mm2.config.client_defs import Def
from mm2.config.value_types import ALSO, BOUNDS, CASE_SENSITIVE, TYPES, ValueType
from mm2.policies.filter import compile_pattern_list
from mm2.policies.replication import PolicyConfigError

__all__ = [
    "METRIC_NAMES_FORMATS",
    "METRIC_NAMES_FORMATS_DEFAULT",
    "ValueProblem",
    "check_def",
    "check_value",
    "closest",
    "did_you_mean",
    "parse_bool",
    "parse_int",
    "parse_list",
    "parse_metric_names_formats",
]

_RANGES = {
    "short": (-(2**15), 2**15 - 1, "a whole number (16-bit)"),
    "int": (-(2**31), 2**31 - 1, "a whole number (32-bit)"),
    "long": (-(2**63), 2**63 - 1, "a whole number (64-bit)"),
}
# Double.parseDouble's decimal forms (an optional f/d suffix, NaN and Infinity spelt as Java does).
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")


class ValueProblem(ValueError):
    """A value that does not parse as its type; the message says what is accepted."""


def closest(word: str, known: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The entry of `known` that `word` looks like a misspelling of, if one is close enough."""
    found = difflib.get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` for the closest of `known`, or an empty string."""
    close = closest(word, known)
    return f" (did you mean {close}?)" if close else ""


def parse_bool(value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueProblem(f"{value!r} is not a boolean; use true or false")
    return text == "true"


def _parse_whole(value: str, kind: str) -> int:
    low, high, what = _RANGES[kind]
    text = value.strip()
    try:
        number = int(text, 10)
    except ValueError:
        raise ValueProblem(f"{value!r} is not a number; use {what}") from None
    if not text.lstrip("+-").isdigit() or not low <= number <= high:
        raise ValueProblem(f"{value!r} is out of range; use {what}")
    return number


def parse_int(value: str, *, long: bool = False) -> int:
    return _parse_whole(value, "long" if long else "int")


def _parse_double(value: str) -> float:
    text = value.strip()
    if not _JAVA_DOUBLE.fullmatch(text):
        raise ValueProblem(f"{value!r} is not a number; use a decimal number such as 0.8")
    return float(text.rstrip("fFdD").replace("Infinity", "inf"))


def parse_list(value: str) -> list[str]:
    from mm2.policies.filter import parse_list as _parse

    return _parse(value)


def _bounds_text(d: Def) -> str:
    if d.low is not None and d.high is not None:
        text = f"between {d.low:g} and {d.high:g}"
    elif d.low is not None:
        text = f"at least {d.low:g}"
    else:
        text = f"at most {d.high:g}"
    return text + "".join(f" or {a}" for a in d.also)


# KIP-1280's `metric.names.formats` on the source and checkpoint connectors: MirrorMaker's
# metrics under their legacy names, the new (KIP-877 `type=plugins`) ones, or both.
METRIC_NAMES_FORMATS = ("legacy", "new")
METRIC_NAMES_FORMATS_DEFAULT = "legacy"


def parse_metric_names_formats(value: str) -> frozenset[str]:
    """The formats `metric.names.formats` names (a non-empty list of legacy and new)."""
    formats = [f.strip() for f in value.split(",") if f.strip()]
    if not formats:
        raise ValueProblem(f"must not be empty; use {' or '.join(METRIC_NAMES_FORMATS)}, or both")
    for f in formats:
        if f not in METRIC_NAMES_FORMATS:
            raise ValueProblem(
                f"{f!r} is not accepted; use a list of {', '.join(METRIC_NAMES_FORMATS)}"
                + did_you_mean(f, METRIC_NAMES_FORMATS)
            )
    return frozenset(formats)


def check_def(key: str, value: str, d: Def) -> None:
    """Raise ValueProblem unless `value` parses as `d` says (Apache's parse, then validator)."""
    kind = d.kind
    if key == "metric.names.formats":
        parse_metric_names_formats(value)
        return
    if isinstance(kind, tuple):
        text = value.strip()
        fold = str.lower if d.ignore_case else str
        if fold(text) not in {fold(k) for k in kind}:
            raise ValueProblem(
                f"{value!r} is not accepted; use one of {', '.join(kind)}"
                + did_you_mean(text, kind)
            )
        return
    number: float
    if kind == "boolean":
        parse_bool(value)
        return
    if kind in _RANGES:
        number = _parse_whole(value, kind)
    elif kind == "double":
        number = _parse_double(value)
    elif kind == "list" and key in TYPES:  # the connectors' regex lists
        try:
            compile_pattern_list(key, value)
        except PolicyConfigError as exc:
            raise ValueProblem(exc.detail) from None
        return
    else:
        if d.non_empty and not value.strip():
            raise ValueProblem("must not be empty")
        return
    if value.strip() in d.also:
        return
    if (d.low is not None and number < d.low) or (d.high is not None and number > d.high):
        raise ValueProblem(f"{value!r} is out of range; use a number {_bounds_text(d)}")


def connector_def(key: str, kind: ValueType | None = None) -> Def | None:
    kind = kind if kind is not None else TYPES.get(key)
    if kind is None:
        return None
    low, high = BOUNDS.get(key, (None, None))
    return Def(kind, low, high, ignore_case=key not in CASE_SENSITIVE, also=ALSO.get(key, ()))


def check_value(key: str, value: str, kind: ValueType | None = None) -> None:
    """Raise ValueProblem when `value` is not a valid `kind` (default: the type of `key`)."""
    d = connector_def(key, kind)
    if d is not None and d.kind != "class":
        check_def(key, value, d)
