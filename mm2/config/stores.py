"""Java key and trust stores (JKS, PKCS12) as librdkafka reads them: PEM text, made once per
store file and process.

PKCS12 is read with the cryptography package. JKS, Java's own format, is read with Java's own
`keytool` (a JDK is on every host that runs mm2: Spark needs one): the trusted certificates with
`keytool -list -rfc`, a private key by converting the store to PKCS12 in a private (0700)
temporary directory that is removed at once. Passwords reach keytool through its environment,
never its command line, and appear in no message. The PEM text goes into the client settings
(`ssl.ca.pem`, `ssl.certificate.pem`, `ssl.key.pem`), so Spark executors on other hosts need no
file of it; the private key stays encrypted there, under the key's own password.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    pkcs12,
)

__all__ = ["KeyPair", "StoreProblem", "key_pair", "trusted_certificates"]

_TIMEOUT_S = 120
_KEY_ENTRY = re.compile(r"^(.+?), [^,]+, [^,]+, PrivateKeyEntry,\s*$", re.M)


class StoreProblem(ValueError):
    """A store that cannot be read: missing, of another type, or a wrong password."""


@dataclass(frozen=True)
class KeyPair:
    """A client's certificate chain and its private key, encrypted under `password` (PEM)."""

    certificate_pem: str
    key_pem: str
    password: str


def _keytool() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "keytool").exists():
        return str(Path(home) / "bin" / "keytool")
    found = shutil.which("keytool")
    if found is None:
        raise StoreProblem(
            "reading a JKS store needs Java's keytool (install a JDK 17, or convert the store "
            "to PKCS12 or PEM)"
        )
    return found


def _run_keytool(args: list[str], secrets: dict[str, str], what: str) -> str:
    env = {**os.environ, **secrets}
    try:
        done = subprocess.run(
            [_keytool(), "-J-Duser.language=en", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StoreProblem(f"cannot read {what}: keytool did not run ({exc})") from None
    if done.returncode != 0:
        said = [ln for ln in (done.stdout + done.stderr).splitlines() if "error" in ln.lower()]
        reason = said[-1].replace("keytool error: ", "") if said else "keytool failed"
        raise StoreProblem(f"cannot read {what}: {reason}")
    return done.stdout


def _readable(location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise StoreProblem(f"cannot read {location!r} ({reason})") from None


def _load_pkcs12(location: str, password: str | None, what: str) -> pkcs12.PKCS12KeyAndCertificates:
    data = _readable(location)
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        hint = "" if password else " (is its password set?)"
        raise StoreProblem(
            f"cannot read {what}: not a PKCS12 store, or the password is wrong{hint}"
        ) from None


def _pem(certificates: list[x509.Certificate]) -> str:
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


@functools.lru_cache(maxsize=64)
def _trusted(location: str, kind: str, password: str | None, _stamp: tuple[int, int]) -> str:
    what = f"the {kind} truststore {location}"
    if kind == "PKCS12":
        store = _load_pkcs12(location, password, what)
        certificates = [c.certificate for c in store.additional_certs]
        if store.cert is not None:
            certificates.insert(0, store.cert.certificate)
    else:
        args = ["-list", "-rfc", "-keystore", location, "-storetype", kind]
        secrets = {}
        if password is not None:
            args += ["-storepass:env", "MM2_STORE_PASSWORD"]
            secrets["MM2_STORE_PASSWORD"] = password
        listing = _run_keytool(args, secrets, what)
        try:
            certificates = x509.load_pem_x509_certificates(listing.encode("ascii", "replace"))
        except ValueError:
            certificates = []
    if not certificates:
        raise StoreProblem(f"{what} holds no certificate")
    return _pem(certificates)


def _stamp(location: str) -> tuple[int, int]:
    try:
        st = Path(location).stat()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise StoreProblem(f"cannot read {location!r} ({reason})") from None
    return st.st_mtime_ns, st.st_size


def trusted_certificates(location: str, kind: str, password: str | None) -> str:
    """The PEM certificates a JKS or PKCS12 truststore trusts (read again when the file changes)."""
    return _trusted(location, kind.upper(), password, _stamp(location))


def _jks_as_pkcs12(location: str, password: str, key_password: str | None) -> bytes:
    what = f"the JKS keystore {location}"
    secrets = {"MM2_STORE_PASSWORD": password, "MM2_KEY_PASSWORD": key_password or password}
    extra: list[str] = []
    if key_password is not None and key_password != password:
        # keytool takes a key password only with the alias of the key it belongs to.
        listing = _run_keytool(
            [
                "-list",
                "-keystore",
                location,
                "-storetype",
                "JKS",
                "-storepass:env",
                "MM2_STORE_PASSWORD",
            ],
            secrets,
            what,
        )
        aliases = _KEY_ENTRY.findall(listing)
        if not aliases:
            raise StoreProblem(f"{what} holds no private key")
        extra = ["-srcalias", aliases[0], "-srckeypass:env", "MM2_KEY_PASSWORD"]
    with tempfile.TemporaryDirectory(prefix="mm2-store-") as private:  # made 0700
        target = Path(private) / "store.p12"
        _run_keytool(
            [
                "-importkeystore",
                "-noprompt",
                "-srckeystore",
                location,
                "-srcstoretype",
                "JKS",
                "-srcstorepass:env",
                "MM2_STORE_PASSWORD",
                "-destkeystore",
                str(target),
                "-deststoretype",
                "PKCS12",
                "-deststorepass:env",
                "MM2_KEY_PASSWORD",
                *extra,
            ],
            secrets,
            what,
        )
        return target.read_bytes()


@functools.lru_cache(maxsize=64)
def _pair(
    location: str, kind: str, password: str, key_password: str | None, _stamp: tuple[int, int]
) -> KeyPair:
    what = f"the {kind} keystore {location}"
    secret = key_password or password
    if kind == "JKS":
        data = _jks_as_pkcs12(location, password, key_password)
        try:
            store = pkcs12.load_pkcs12(data, secret.encode())
        except ValueError:
            raise StoreProblem(f"cannot read {what}: keytool made an unreadable store") from None
    else:
        store = _load_pkcs12(location, password, what)
    if store.key is None or store.cert is None:
        raise StoreProblem(f"{what} holds no private key with its certificate")
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    key = store.key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(secret.encode())
    )
    return KeyPair(_pem(chain), key.decode("ascii"), secret)


def key_pair(location: str, kind: str, password: str | None, key_password: str | None) -> KeyPair:
    """The first private key of a JKS or PKCS12 keystore with its certificate chain."""
    if not password:
        raise StoreProblem(f"a {kind} keystore needs its password (ssl.keystore.password)")
    return _pair(location, kind.upper(), password, key_password, _stamp(location))
