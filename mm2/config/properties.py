"""The java.util.Properties reader: a flat key->value map plus the line each key was set on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import javaproperties

from mm2.errors import ConfigError

__all__ = ["PropertiesFile", "parse_properties", "read_properties"]

_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class PropertiesFile:
    """What a .properties file says: duplicates resolved (last wins), lines kept for messages."""

    path: str
    values: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, key: str) -> int | None:
        return self.lines.get(key)


def parse_properties(text: str, path: str = "<string>") -> PropertiesFile:
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    line = 1
    elements = javaproperties.parse(text)
    while True:
        try:
            element = next(elements)
        except StopIteration:
            break
        except javaproperties.InvalidUEscapeError as exc:
            # Java's Properties.load refuses it too ("Malformed \\uxxxx encoding").
            raise ConfigError(
                f"{exc.escape} is not a \\u escape; write \\u and four hex digits "
                "(or \\\\u for a backslash followed by u)",
                file=path,
                line=_line_of_escape(text, exc.escape, line),
            ) from None
        if isinstance(element, javaproperties.KeyValue):
            values[element.key] = element.value
            lines[element.key] = line
        line += len(_EOL.findall(element.source))
    return PropertiesFile(path=path, values=values, lines=lines)


def _line_of_escape(text: str, escape: str, after: int) -> int:
    """The line of the first bad escape at or after line `after` (1-based)."""
    for number, content in enumerate(_EOL.split(text), start=1):
        if number >= after and escape in content:
            return number
    return after


def read_properties(path: str | Path) -> PropertiesFile:
    """Read a file as Java does (ISO-8859-1 with \\uXXXX escapes; UTF-8 also accepted)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"cannot read the file ({reason}); give the path of a readable mm2.properties",
            file=name,
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # Properties.load(InputStream) reads ISO-8859-1
    return parse_properties(text, name)
