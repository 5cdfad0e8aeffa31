"""Typed reading of string settings as Kafka's ConfigDef parses them; errors name what is valid."""

from __future__ import annotations

from mm2.config.names import TYPES, ValueType
from policies.filter import compile_pattern_list
from policies.replication import PolicyConfigError

__all__ = ["ValueProblem", "check_value", "parse_bool", "parse_int", "parse_list"]

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


class ValueProblem(ValueError):
    """A value that does not parse as its type; the message says what is accepted."""


def parse_bool(value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueProblem(f"{value!r} is not a boolean; use true or false")
    return text == "true"


def parse_int(value: str, *, long: bool = False) -> int:
    low, high = _LONG_RANGE if long else _INT_RANGE
    kind = "a whole number (64-bit)" if long else "a whole number (32-bit)"
    text = value.strip()
    try:
        number = int(text, 10)
    except ValueError:
        raise ValueProblem(f"{value!r} is not a number; use {kind}") from None
    if not text.lstrip("+-").isdigit() or not low <= number <= high:
        raise ValueProblem(f"{value!r} is out of range; use {kind}")
    return number


def parse_list(value: str) -> list[str]:
    from policies.filter import parse_list as _parse

    return _parse(value)


def check_value(key: str, value: str, kind: ValueType | None = None) -> None:
    """Raise ValueProblem when `value` is not a valid `kind` (default: the type of `key`)."""
    kind = kind if kind is not None else TYPES.get(key)
    if kind is None or kind in ("string", "class"):
        return
    if kind == "boolean":
        parse_bool(value)
    elif kind in ("int", "long"):
        parse_int(value, long=kind == "long")
    elif kind == "list":
        try:
            compile_pattern_list(key, value)
        except PolicyConfigError as exc:
            raise ValueProblem(exc.detail) from None
    elif isinstance(kind, tuple) and value.strip().upper() not in (k.upper() for k in kind):
        raise ValueProblem(f"{value!r} is not accepted; use one of {', '.join(kind)}")
