"""Config providers `${env:VAR}`, `${file:path:key}`, `${dir:path:file}`, resolved as Kafka does."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import javaproperties

__all__ = ["ProviderProblem", "Providers"]

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}
_VARIABLE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_KAFKA = "org.apache.kafka.common.config.provider."
_KINDS = {
    _KAFKA + "EnvVarConfigProvider": "env",
    _KAFKA + "FileConfigProvider": "file",
    _KAFKA + "DirectoryConfigProvider": "dir",
}


class ProviderProblem(ValueError):
    """A `${...}` reference that cannot be resolved."""


@dataclass(frozen=True)
class Providers:
    """The providers declared by `config.providers` and `config.providers.<name>.class`."""

    kinds: Mapping[str, str]

    @classmethod
    def from_settings(cls, raw: Mapping[str, str]) -> Providers:
        names = [n for n in (s.strip() for s in raw.get("config.providers", "").split(",")) if n]
        kinds: dict[str, str] = {}
        for name in names:
            class_key = f"config.providers.{name}.class"
            class_name = raw.get(class_key, "").strip()
            kind = _KINDS.get(class_name)
            if kind is None:
                known = ", ".join(sorted(_KINDS))
                raise ProviderProblem(
                    f"{class_key}={class_name!r}: unknown config provider; use one of {known}"
                )
            kinds[name] = kind
        return cls(kinds)

    def references(self, value: str) -> list[str]:
        return [m.group(0) for m in _VARIABLE.finditer(value) if m.group(1) in self.kinds]

    def resolve(self, value: str) -> str:
        """Replace every reference to a declared provider; others stay, as in Kafka."""

        def one(match: re.Match[str]) -> str:
            name, path, key = match.group(1), match.group(2), match.group(3)
            kind = self.kinds.get(name)
            if kind is None:
                return match.group(0)
            return self._lookup(kind, path or "", key, match.group(0))

        return _VARIABLE.sub(one, value)

    @staticmethod
    def _lookup(kind: str, path: str, key: str, ref: str) -> str:
        if kind == "env":
            if key not in os.environ:
                raise ProviderProblem(f"{ref}: environment variable {key} is not set")
            return os.environ[key]
        if kind == "dir":
            target = Path(path) / key
            try:
                return target.read_text(encoding="utf-8")
            except OSError as exc:
                raise ProviderProblem(f"{ref}: cannot read {target} ({exc.strerror})") from None
        try:
            with Path(path).open(encoding="latin-1") as fp:
                data = javaproperties.load(fp)
        except OSError as exc:
            where = path or "(no path)"
            raise ProviderProblem(f"{ref}: cannot read {where} ({exc.strerror})") from None
        if key not in data:
            raise ProviderProblem(f"{ref}: {path} has no key {key!r}")
        value: str = data[key]
        return value
