"""Where mm2 reads a value more kindly than Apache MM2 does: Apache's reading, and the warning.

mm2 reads a boolean as `value.strip().lower()` is "true" or "false". Apache reads it two ways:
- ConfigDef (every connector and client key): Java's `trim()`, which drops the characters up
  to U+0020 at both ends (not U+00A0 and other Unicode spaces, which Python's strip drops
  too), then a case-blind compare; anything else is refused;
- `Boolean.parseBoolean` (MirrorMakerConfig.clusterPairs, DefaultReplicationPolicy): a
  case-blind compare with "true" and no trimming at all; anything else is false.
A .properties reader drops the spaces before a value, never those after it, so `true ` with a
trailing space reaches Apache as is: mm2 keeps its reading and says what Apache's is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mm2.config.keys import shape
from mm2.config.value_types import TYPES
from mm2.config.values import ValueProblem, parse_bool

__all__ = ["configdef_boolean", "java_parse_boolean", "java_trim", "kinder_readings"]

# The keys Apache reads with Boolean.parseBoolean, by their setting (prefix stripped) and what
# that reading decides.
_HERDERS = "when it decides which flows get a herder (MirrorMakerConfig.clusterPairs"
_PARSE_BOOLEAN = {
    "enabled": _HERDERS,
    "emit.heartbeats.enabled": _HERDERS,
    "replication.policy.internal.topic.separator.enabled": (
        "when it names the internal topics (DefaultReplicationPolicy"
    ),
}


def java_trim(value: str) -> str:
    """Java's String.trim(): the characters up to U+0020 dropped at both ends."""
    start, end = 0, len(value)
    while start < end and value[start] <= " ":
        start += 1
    while end > start and value[end - 1] <= " ":
        end -= 1
    return value[start:end]


def configdef_boolean(value: str) -> bool | None:
    """ConfigDef.parseType for a BOOLEAN: None where Apache refuses the value."""
    text = java_trim(value).lower()
    return {"true": True, "false": False}.get(text)


def java_parse_boolean(value: str) -> bool:
    """Boolean.parseBoolean: "true" in any case, nothing around it."""
    return value.lower() == "true"


def _parse_boolean_key(key: str) -> bool:
    head, _, rest = key.partition(".")
    if "->" in head:
        return rest in _PARSE_BOOLEAN
    return key in ("emit.heartbeats.enabled", "replication.policy.internal.topic.separator.enabled")


def kinder_readings(
    raw: Mapping[str, str],
    resolved: Mapping[str, str],
    aliases: Sequence[str],
    where: Mapping[str, str],
) -> list[str]:
    """One message per boolean key mm2 reads otherwise than Apache would, naming the value
    (repr) and Apache's reading. `where` maps a key to its "file:line" for the message."""
    found = []
    for key, value in raw.items():
        setting = shape(key, aliases).setting
        if TYPES.get(setting) != "boolean":
            continue
        try:
            ours = parse_bool(resolved[key])
        except ValueProblem:
            continue  # refused at load
        if _parse_boolean_key(key):
            theirs: bool | None = java_parse_boolean(value)
            how = _PARSE_BOOLEAN[setting] + " uses Boolean.parseBoolean, which does not trim)"
        else:
            theirs = configdef_boolean(resolved[key])
            how = "(its ConfigDef trims only the characters up to U+0020)"
        if theirs == ours:
            continue
        shown = repr(value) if value == resolved[key] else f"the value of {value}"
        reading = "refuses it" if theirs is None else f"reads it as {str(theirs).lower()}"
        found.append(
            f"{where.get(key, key)}: {key} = {shown}: mm2 reads it as {str(ours).lower()}; "
            f"Apache MirrorMaker 2 {reading} {how}; write {str(ours).lower()} without the "
            "spaces so that both read it alike"
        )
    return found
