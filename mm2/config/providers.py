"""Config providers `${env:VAR}`, `${file:path:key}`, `${dir:path:file}`, resolved as Kafka does.

Only the providers mm2.properties declares (`config.providers`) resolve anything; a reference
to any other name stays as written. FileConfigProvider and DirectoryConfigProvider honour
`config.providers.<name>.param.allowed.paths` (KIP-993) and EnvVarConfigProvider honours
`config.providers.<name>.param.allowlist.pattern` (KIP-887): a reference outside them is
refused. Where Kafka answers such a reference with nothing (and a warning), we raise, so the
operator sees which reference and why.

Resolved values are secrets until proven otherwise: every value a provider hands out is
remembered, and `redact()` puts the reference back wherever one shows up in a text. Log records
are redacted as they are made (installed with the first value resolved), and the REST API
redacts what it answers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import javaproperties

__all__ = ["ProviderProblem", "Providers", "has_reference", "redact"]

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}
_VARIABLE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_KAFKA = "org.apache.kafka.common.config.provider."
_KINDS = {
    _KAFKA + "EnvVarConfigProvider": "env",
    _KAFKA + "FileConfigProvider": "file",
    _KAFKA + "DirectoryConfigProvider": "dir",
}
# Shorter values are not hidden: replacing "all" or "1" everywhere would garble every text.
_MIN_SECRET = 4


class ProviderProblem(ValueError):
    """A `${...}` reference that cannot be resolved, or a provider that cannot be declared."""


def has_reference(value: str) -> bool:
    """True when `value` holds a `${provider:...}` reference (declared or not)."""
    return _VARIABLE.search(value) is not None


@dataclass(frozen=True)
class _Provider:
    kind: str
    allowed_paths: tuple[Path, ...] | None = None
    allowlist: re.Pattern[str] | None = None


def _allowed_paths(name: str, raw: Mapping[str, str]) -> tuple[Path, ...] | None:
    key = f"config.providers.{name}.param.allowed.paths"
    text = raw.get(key, "").strip()
    if not text:
        return None
    paths = []
    for item in (p.strip() for p in text.split(",")):
        path = Path(item)
        if not path.is_absolute() or not path.exists():
            raise ProviderProblem(
                f"{key}: {item!r} is not valid; each allowed path must be absolute and exist"
            )
        paths.append(path.resolve())
    return tuple(paths)


def _allowlist(name: str, raw: Mapping[str, str]) -> re.Pattern[str] | None:
    key = f"config.providers.{name}.param.allowlist.pattern"
    if key not in raw:
        return None
    try:
        return re.compile(raw[key])
    except re.error as exc:
        raise ProviderProblem(f"{key}: {raw[key]!r} is not a regular expression ({exc})") from None


@dataclass(frozen=True)
class Providers:
    """The providers declared by `config.providers` and `config.providers.<name>.class`."""

    kinds: Mapping[str, str]
    _params: Mapping[str, _Provider] = field(default_factory=dict, repr=False)

    @classmethod
    def from_settings(cls, raw: Mapping[str, str]) -> Providers:
        names = [n for n in (s.strip() for s in raw.get("config.providers", "").split(",")) if n]
        kinds: dict[str, str] = {}
        params: dict[str, _Provider] = {}
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
            if kind == "env":
                params[name] = _Provider(kind, allowlist=_allowlist(name, raw))
            else:
                params[name] = _Provider(kind, allowed_paths=_allowed_paths(name, raw))
        return cls(kinds, params)

    def references(self, value: str) -> list[str]:
        return [m.group(0) for m in _VARIABLE.finditer(value) if m.group(1) in self.kinds]

    def resolve(self, value: str) -> str:
        """Replace every reference to a declared provider; others stay, as in Kafka."""

        def one(match: re.Match[str]) -> str:
            name, path, key = match.group(1), match.group(2), match.group(3)
            if name not in self.kinds:
                return match.group(0)
            provider = self._params.get(name) or _Provider(self.kinds[name])
            found = _lookup(provider, path or "", key, match.group(0))
            _RESOLVED.add(found, match.group(0))
            return found

        return _VARIABLE.sub(one, value)

    def resolve_all(self, config: Mapping[str, str]) -> dict[str, str]:
        """Every value of a connector config resolved (Connect's WorkerConfigTransformer)."""
        return {k: self.resolve(v) for k, v in config.items()}


def _allowed(provider: _Provider, path: str, ref: str) -> Path:
    """The path to read, refused when `allowed.paths` does not cover it (symlinks followed)."""
    if provider.allowed_paths is None:
        return Path(path)
    real = Path(path).resolve()
    if not Path(path).is_absolute() or not any(
        real == allowed or allowed in real.parents for allowed in provider.allowed_paths
    ):
        shown = ", ".join(str(p) for p in provider.allowed_paths)
        raise ProviderProblem(
            f"{ref}: {path} is outside the provider's allowed.paths ({shown}); "
            "refer to a file there or extend allowed.paths in mm2.properties"
        )
    return real


def _lookup(provider: _Provider, path: str, key: str, ref: str) -> str:
    if provider.kind == "env":
        if provider.allowlist is not None and not provider.allowlist.fullmatch(key):
            raise ProviderProblem(
                f"{ref}: environment variable {key} does not match the provider's "
                "allowlist.pattern in mm2.properties"
            )
        if key not in os.environ:
            raise ProviderProblem(f"{ref}: environment variable {key} is not set")
        return os.environ[key]
    where = _allowed(provider, path, ref)
    if provider.kind == "dir":
        # Only the files directly in the directory, as Kafka's provider lists them.
        if not key or key in (".", "..") or "/" in key or os.sep in key:
            raise ProviderProblem(f"{ref}: {key!r} is not the name of a file in {path}")
        target = where / key
        if not target.is_file():
            raise ProviderProblem(f"{ref}: {path} has no file {key!r}")
        try:
            return target.read_text(encoding="utf-8")
        except OSError as exc:
            raise ProviderProblem(f"{ref}: cannot read {target} ({exc.strerror})") from None
    try:
        with where.open(encoding="latin-1") as fp:
            data = javaproperties.load(fp)
    except OSError as exc:
        shown = path or "(no path)"
        raise ProviderProblem(f"{ref}: cannot read {shown} ({exc.strerror})") from None
    if key not in data:
        raise ProviderProblem(f"{ref}: {path} has no key {key!r}")
    value: str = data[key]
    return value


class _Resolved:
    """The values providers handed out in this process, each with the reference it came from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refs: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        self._installed = False

    def add(self, value: str, ref: str) -> None:
        candidates = {value, value.strip()}
        with self._lock:
            added = False
            for secret in candidates:
                if len(secret) >= _MIN_SECRET and secret not in self._refs:
                    self._refs[secret] = ref
                    added = True
            if added:
                longest_first = sorted(self._refs, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(s) for s in longest_first))
            install = not self._installed
            self._installed = True
        if install:
            _install_log_redaction()

    def redact(self, text: str) -> str:
        with self._lock:
            pattern, refs = self._pattern, self._refs
        if pattern is None:
            return text
        return pattern.sub(lambda m: refs[m.group(0)], text)


_RESOLVED = _Resolved()


def redact(text: str) -> str:
    """`text` with every value a provider resolved replaced by its `${...}` reference."""
    return _RESOLVED.redact(text)


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a broken format is reported by the handler, not here
        return
    hidden = redact(message)
    if hidden != message:
        record.msg, record.args = hidden, None
    if record.exc_info and record.exc_info[0] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        hidden = redact(text)
        if hidden != text:
            record.exc_text = hidden
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


def _install_log_redaction() -> None:
    """Redact every log record as it is made, whichever handler writes it later."""
    make = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        _redact_record(record)
        return record

    logging.setLogRecordFactory(factory)
