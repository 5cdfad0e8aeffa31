"""What the installed Kafka client was built with, and what a client's settings need of it.

librdkafka lists its compile-time features in `builtin.features`; a client created with that
property set to features it lacks fails at once, which is how we ask (confluent-kafka has no
getter for it). The PyPI wheels lack `sasl_gssapi`: Kerberos needs a build with Cyrus libsasl2.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from confluent_kafka import KafkaException, Producer, libversion, version

__all__ = [
    "MECHANISM_FEATURES",
    "client_description",
    "has_feature",
    "missing_features",
    "offered_mechanisms",
    "required_features",
]

# SASL mechanism -> the librdkafka feature that provides it.
MECHANISM_FEATURES: Mapping[str, str] = {
    "GSSAPI": "sasl_gssapi",
    "PLAIN": "sasl_plain",
    "SCRAM-SHA-256": "sasl_scram",
    "SCRAM-SHA-512": "sasl_scram",
    "OAUTHBEARER": "sasl_oauthbearer",
}


@functools.cache
def has_feature(feature: str) -> bool:
    """Whether this process's librdkafka was built with `feature` (e.g. `sasl_gssapi`)."""
    try:
        Producer({"builtin.features": feature, "log_level": 0})
    except KafkaException:
        return False
    return True


def required_features(settings: Mapping[str, str]) -> dict[str, str]:
    """librdkafka feature -> what in `settings` (librdkafka names) needs it.

    A SASL protocol without `sasl.mechanisms` means GSSAPI, in Java's client as in librdkafka.
    """
    needed: dict[str, str] = {}
    protocol = settings.get("security.protocol", "plaintext").strip().lower()
    if protocol in ("ssl", "sasl_ssl"):
        needed["ssl"] = f"security.protocol {protocol.upper()}"
    if protocol.startswith("sasl_"):
        mechanism = settings.get("sasl.mechanisms", "GSSAPI").strip().upper()
        feature = MECHANISM_FEATURES.get(mechanism)
        if feature is not None:
            needed[feature] = f"sasl.mechanism {mechanism}"
        if mechanism == "OAUTHBEARER" and settings.get("sasl.oauthbearer.method") == "oidc":
            needed["oidc"] = "an OAUTHBEARER login with clientId (OIDC)"
    return needed


def missing_features(settings: Mapping[str, str]) -> dict[str, str]:
    """The subset of required_features(settings) this client lacks."""
    return {f: why for f, why in required_features(settings).items() if not has_feature(f)}


def offered_mechanisms() -> list[str]:
    """The SASL mechanisms this client can speak."""
    return [m for m, feature in MECHANISM_FEATURES.items() if has_feature(feature)]


def client_description() -> str:
    """`confluent-kafka 2.16.1 (librdkafka 2.16.0)`."""
    own = version()  # a (text, number) pair in older releases, the text alone in newer ones
    text = own[0] if isinstance(own, tuple) else own
    return f"confluent-kafka {text} (librdkafka {libversion()[0]})"
