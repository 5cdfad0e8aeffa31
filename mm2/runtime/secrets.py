"""Secrets given over REST, sealed before they are written to Kafka or to the local cache.

A value is a secret when its key is a password key (`sasl.jaas.config`, `ssl.key.password`,
...; mm2.config.model.is_password). It is sealed with Fernet (AES-128-CBC and HMAC-SHA256,
from the `cryptography` package) under a key derived with scrypt from `mm2.rest.secrets.key`,
which every process of the mirror reads from its own mm2.properties (give it through a config
provider, e.g. `${file:/etc/mm2/secrets.properties:rest.key}`); Kafka never holds it. A
reference to a config provider (`${file:...}`) is not a secret and is kept as given. Without
the key, REST refuses a secret and says how to give one.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from mm2.config.model import HIDDEN, is_password
from mm2.errors import BadRequestError, ConfigError
from mm2.runtime.changes import Changes, changes_from_json

__all__ = ["SECRETS_KEY", "SealedChanges", "SecretBox", "open_changes", "seal_changes"]

SECRETS_KEY = "mm2.rest.secrets.key"
_SEALED = "mm2-sealed:v1:"
_SALT = b"mm2 REST secrets v1"


class SecretBox:
    """Seals and opens secret values with the key from mm2.properties (or refuses without)."""

    def __init__(self, passphrase: str | None) -> None:
        self._fernet: Fernet | None = None
        if passphrase:
            key = hashlib.scrypt(passphrase.encode(), salt=_SALT, n=2**14, r=8, p=1, dklen=32)
            self._fernet = Fernet(base64.urlsafe_b64encode(key))

    @staticmethod
    def is_secret(key: str, value: str) -> bool:
        return is_password(key) and not value.startswith("${") and value != HIDDEN

    def seal(self, key: str, value: str) -> str:
        if not self.is_secret(key, value) or value.startswith(_SEALED):
            return value
        if self._fernet is None:
            raise BadRequestError(
                f"{key}: a secret given over REST is stored in Kafka only sealed, and "
                f"{SECRETS_KEY} is not set in mm2.properties; set it (the same on every "
                "process), or give a config provider reference such as ${file:path:key}",
                {key: [f"needs {SECRETS_KEY}"]},
            )
        return _SEALED + self._fernet.encrypt(value.encode()).decode()

    def open(self, key: str, value: str) -> str:
        if not value.startswith(_SEALED):
            return value
        if self._fernet is None:
            raise ConfigError(
                f"{key} was given over REST and is stored sealed; set {SECRETS_KEY} in "
                "mm2.properties to the value the other processes use",
                key=SECRETS_KEY,
            )
        try:
            return self._fernet.decrypt(value[len(_SEALED) :].encode()).decode()
        except InvalidToken:
            raise ConfigError(
                f"{key} was sealed with another {SECRETS_KEY} than this process has",
                key=SECRETS_KEY,
            ) from None


def _map(values: Mapping[str, str], box: SecretBox, seal: bool) -> dict[str, str]:
    change = box.seal if seal else box.open
    return {k: change(k, v) for k, v in values.items()}


def seal_changes(changes: Changes, box: SecretBox) -> dict[str, Any]:
    """The changes as a JSON document with every secret sealed."""
    body = asdict(changes)
    body["properties"] = _map(changes.properties, box, seal=True)
    body["connector_configs"] = {
        name: _map(config, box, seal=True) for name, config in changes.connector_configs.items()
    }
    return body


def open_changes(body: Mapping[str, Any], box: SecretBox) -> Changes:
    """The changes a sealed document holds, secrets opened; ValueError if it is malformed."""
    changes = changes_from_json(body)
    changes.properties = _map(changes.properties, box, seal=False)
    changes.connector_configs = {
        name: _map(config, box, seal=False) for name, config in changes.connector_configs.items()
    }
    return changes


class SealedChanges:
    """The Codec of a ChangeStore whose file keeps secrets sealed, as Kafka does."""

    def __init__(self, box: SecretBox) -> None:
        self._box = box

    def seal(self, changes: Changes) -> dict[str, Any]:
        return seal_changes(changes, self._box)

    def open(self, body: Mapping[str, Any]) -> Changes:
        return open_changes(body, self._box)
