"""A throw-away MIT Kerberos realm on loopback, for brokers with a GSSAPI listener.

It runs Debian's `krb5kdc` (package krb5-kdc) on a free port, with its database, stash,
`kdc.conf` and a `krb5.conf` for clients in one directory; `add_principal` creates a principal
with a random key and exports it to a keytab (`kadmin.local`, package krb5-admin-server).
Clients point at the realm with KRB5_CONFIG (MIT) or -Djava.security.krb5.conf (the JVM).

>>> with LocalKdc() as kdc:  # doctest: +SKIP
...     keytab = kdc.add_principal("kafka/localhost")
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from mm2.errors import ClusterError
from mm2.localcluster import process
from mm2.localcluster.ports import LOOPBACK, accepts, free_port

__all__ = ["KDC_PACKAGES", "LocalKdc", "find_kerberos_tools"]

# The Debian packages that carry what this module runs (kinit is for clients that log in).
KDC_PACKAGES = ("krb5-kdc", "krb5-admin-server", "krb5-user")
_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")
_REALM = re.compile(r"^[A-Z0-9][A-Z0-9.\-]*$")
_PRINCIPAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9._\-]+)?$")


def find_kerberos_tools(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """krb5kdc, kdb5_util and kadmin.local from PATH or the sbin directories Debian uses."""
    env = os.environ if env is None else env
    search = os.pathsep.join([env.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = {name: shutil.which(name, path=search) for name in _TOOLS}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise ClusterError(
            f"MIT Kerberos is not installed ({', '.join(missing)} not found); install Debian's "
            f"{' '.join(KDC_PACKAGES)} (`make system-packages` does, as root)"
        )
    return {name: Path(path) for name, path in found.items() if path is not None}


class LocalKdc(process.Service):
    """One Kerberos realm served by a `krb5kdc` child process on 127.0.0.1 (UDP and TCP)."""

    def __init__(
        self,
        realm: str = "MM2.TEST",
        *,
        workdir: Path | str | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        if not _REALM.match(realm):
            raise ClusterError(f"realm {realm!r} must be upper-case letters, digits, '.', '-'")
        self.realm = realm
        self._workdir = process.WorkDir(workdir, prefix="mm2-kdc-")
        self._start_timeout = start_timeout
        self._port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._tools: dict[str, Path] = {}

    # -- what callers read -------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        return self._workdir.path(ClusterError("the KDC has not been started"))

    @property
    def port(self) -> int:
        return self._port

    @property
    def krb5_conf(self) -> Path:
        """The client configuration: this realm is the default one and its KDC is ours."""
        return self.workdir / "krb5.conf"

    @property
    def log_path(self) -> Path:
        """krb5kdc's own log: one line per AS_REQ (login) and TGS_REQ (service ticket)."""
        return self.workdir / "kdc.log"

    def environment(self) -> dict[str, str]:
        """Variables that make MIT Kerberos tools and libraries use this realm."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self._kdc_conf)}

    def principal(self, name: str) -> str:
        """`name@REALM`."""
        return f"{name}@{self.realm}"

    @property
    def _kdc_conf(self) -> Path:
        return self.workdir / "kdc.conf"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Create the realm's database and start the KDC; returns once it accepts TCP."""
        self._tools = find_kerberos_tools()
        self._workdir.make()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._port = free_port()
        self._write_configs()
        self._run(
            "kdb5_util",
            "-r",
            self.realm,
            "create",
            "-s",
            "-P",
            secrets.token_urlsafe(24),  # the master key's password: the stash file keeps it
        )
        command = [str(self._tools["krb5kdc"]), "-n", "-r", self.realm]
        self._process = process.spawn(
            command, log=self.workdir / "krb5kdc.out", cwd=self.workdir, env=self._env()
        )
        self._await_ready()
        return self

    def stop(self) -> None:
        """Stop the KDC and remove its directory if we made it."""
        if self._process is not None:
            process.terminate([self._process], grace=5)
            self._process = None
        self._workdir.remove()

    # -- principals --------------------------------------------------------------------------

    def add_principal(self, name: str, keytab: Path | str | None = None) -> Path:
        """Create `name@REALM` with a random key and export it to a keytab (returned), e.g.
        `kafka/localhost` for a broker or `mirror` for a client."""
        if not _PRINCIPAL.match(name):
            raise ClusterError(f"principal {name!r} must be NAME or NAME/HOST, without a realm")
        default = self.workdir / f"{name.replace('/', '_')}.keytab"
        path = (Path(keytab) if keytab is not None else default).resolve()
        if '"' in str(path):
            raise ClusterError(f"keytab path {path} must not hold a double quote")
        self._run("kadmin.local", "-r", self.realm, "-q", f"addprinc -randkey {name}")
        self._run("kadmin.local", "-r", self.realm, "-q", f'ktadd -k "{path}" {name}')
        if not path.is_file():  # kadmin.local exits 0 even when a query failed
            raise ClusterError(f"kadmin.local made no keytab for {name}; see {self.log_path}")
        return path

    # -- internals ---------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        return {**os.environ, **self.environment()}

    def _run(self, tool: str, *args: str) -> None:
        result = subprocess.run(
            [str(self._tools[tool]), *args],
            env=self._env(),
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if result.returncode != 0 or "error" in result.stderr.lower():
            raise ClusterError(
                f"{tool} {' '.join(args[:4])} failed (exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[-500:]}"
            )

    def _write_configs(self) -> None:
        address = f"{LOOPBACK}:{self._port}"
        self._kdc_conf.write_text(
            f"""[kdcdefaults]
    kdc_listen = {address}
    kdc_tcp_listen = {address}

[realms]
    {self.realm} = {{
        database_name = {self.workdir / "principal"}
        key_stash_file = {self.workdir / "stash"}
        acl_file = {self.workdir / "kadm5.acl"}
        max_life = 1d
        max_renewable_life = 7d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{self.log_path}
""",
            encoding="utf-8",
        )
        # No DNS at all: host names are taken as written (kafka/localhost stays kafka/localhost),
        # and TCP only (udp_preference_limit = 1), which MIT libraries and the JVM both honour.
        self.krb5_conf.write_text(
            f"""[libdefaults]
    default_realm = {self.realm}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    rdns = false
    dns_canonicalize_hostname = false
    udp_preference_limit = 1
    ticket_lifetime = 24h
    renew_lifetime = 7d
    forwardable = true

[realms]
    {self.realm} = {{
        kdc = {address}
    }}

[domain_realm]
    localhost = {self.realm}
    {LOOPBACK} = {self.realm}
""",
            encoding="utf-8",
        )

    def _await_ready(self) -> None:
        proc = self._process
        if proc is not None and accepts(
            self._port, self._start_timeout, lambda: proc.poll() is None
        ):
            return
        code = None if proc is None else proc.poll()
        if proc is not None:
            process.terminate([proc], grace=1)
            self._process = None
        tail = process.read_tail(self.workdir / "krb5kdc.out", 20) or "(empty)"
        raise ClusterError(
            f"krb5kdc did not accept connections on {LOOPBACK}:{self._port} within "
            f"{self._start_timeout:.0f}s (exit code {code}); its output, from "
            f"{self.workdir / 'krb5kdc.out'}:\n{tail}"
        )
