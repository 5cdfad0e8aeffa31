"""A registry's settings, named as in Confluent's clients, read from a flow's config.

`schema.registry.url` (a comma list: the next URL is tried when one does not connect),
`basic.auth.credentials.source` (USER_INFO, the default, or URL: `user:password@` in the URL),
`basic.auth.user.info` (`user:password`), `schema.registry.ssl.ca.location`,
`schema.registry.ssl.certificate.location`, `schema.registry.ssl.key.location` and
`schema.registry.ssl.key.password`; each also with or without the `schema.registry.` prefix,
as Confluent's serializers accept. Ours: `schema.registry.requests.per.second` (default 50: the
sync's politeness, mm2.schemas.polite) and `schema.registry.timeout.ms` (10000).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

from mm2.errors import ConfigError

__all__ = ["RegistrySettings"]


@dataclass(frozen=True)
class RegistrySettings:
    """A registry's address, credentials and manners, from Confluent-style keys."""

    urls: tuple[str, ...]  # never with credentials in them
    user_info: str | None = field(default=None, repr=False)  # "user:password" for basic auth
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    requests_per_second: float = 50.0
    timeout_s: float = 10.0

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> RegistrySettings:
        """Read the keys above (`schema.registry.`-prefixed or not, as Confluent accepts);
        ConfigError naming the key for a value that cannot work."""

        def get(key: str) -> str | None:
            for name in (f"schema.registry.{key}", key):
                value = config.get(name, "").strip()
                if value:
                    return value
            return None

        given = get("url")
        if given is None:
            raise ConfigError(
                "no registry named: set <alias>.schema.registry.url for both clusters of the flow",
                key="schema.registry.url",
            )
        urls = tuple(u.strip().rstrip("/") for u in given.split(",") if u.strip())
        if not urls or any(not u.startswith(("http://", "https://")) for u in urls):
            raise ConfigError(
                f"{given!r} is not a registry URL (http[s]://host:port[/path])",
                key="schema.registry.url",
            )
        source = (get("basic.auth.credentials.source") or "USER_INFO").upper()
        user_info = get("basic.auth.user.info")
        if source == "URL":  # user:password@ taken out of the URLs, which reach log lines
            user_info = next((found for u in urls if (found := _user_info(u))), None)
        elif source != "USER_INFO":
            raise ConfigError(
                f"{source!r} is not supported; use USER_INFO (basic.auth.user.info) or URL",
                key="basic.auth.credentials.source",
            )
        if user_info is not None and ":" not in user_info:
            raise ConfigError("expected user:password", key="basic.auth.user.info")
        return cls(
            urls=tuple(_without_user_info(u) for u in urls),
            user_info=user_info,
            ca_location=get("ssl.ca.location"),
            certificate_location=get("ssl.certificate.location"),
            key_location=get("ssl.key.location"),
            key_password=get("ssl.key.password"),
            requests_per_second=_number(get, "requests.per.second", 50.0),
            timeout_s=_number(get, "timeout.ms", 10_000.0) / 1000.0,
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for https URLs with a CA or a client certificate; None: defaults."""
        if not (self.ca_location or self.certificate_location):
            return None
        try:
            context = ssl.create_default_context(cafile=self.ca_location)
            if self.certificate_location:
                context.load_cert_chain(
                    self.certificate_location, self.key_location, password=self.key_password
                )
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"the registry's TLS files cannot be used: {exc}",
                key="schema.registry.ssl.ca.location",
            ) from None
        return context


def _number(get: Callable[[str], str | None], key: str, default: float) -> float:
    text = get(key)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{text!r} is not a number", key=f"schema.registry.{key}") from None


def _user_info(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.username is None:
        return None
    return f"{unquote(parts.username)}:{unquote(parts.password or '')}"


def _without_user_info(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
