"""What the docker/ tests need without a Docker engine: a Dockerfile reader, and Debian's
package index for one release and several architectures, asked through apt itself."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# -- Dockerfile -----------------------------------------------------------------------------

KEYWORDS = frozenset(
    {
        "FROM",
        "RUN",
        "CMD",
        "LABEL",
        "EXPOSE",
        "ENV",
        "ADD",
        "COPY",
        "ENTRYPOINT",
        "VOLUME",
        "USER",
        "WORKDIR",
        "ARG",
        "ONBUILD",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
        "MAINTAINER",
    }
)


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    value: str  # continuation lines joined, comments inside them dropped
    line: int  # where it starts, 1-based

    def exec_form(self) -> list[str]:
        """The JSON array form (`CMD ["a", "b"]`); anything else is an error here."""
        parsed = json.loads(self.value)
        if not isinstance(parsed, list) or not all(isinstance(p, str) for p in parsed):
            raise ValueError(f"line {self.line}: {self.keyword} is not a JSON string array")
        return parsed

    def flags_and_rest(self) -> tuple[dict[str, str], str]:
        """`COPY --from=wheel a b` -> ({"from": "wheel"}, "a b")."""
        flags: dict[str, str] = {}
        rest = self.value
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags[name] = value
            rest = rest.lstrip()
        return flags, rest


def read_dockerfile(text: str) -> list[Instruction]:
    """Instructions in order, as the builder reads them: a trailing backslash continues the
    line, a line starting with # is a comment (also between continuation lines)."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        continued = stripped.endswith("\\")
        pending.append(stripped[:-1].strip() if continued else stripped)
        if continued:
            continue
        keyword, _, value = " ".join(p for p in pending if p).partition(" ")
        if keyword.upper() not in KEYWORDS:
            raise ValueError(f"line {start}: unknown instruction {keyword!r}")
        instructions.append(Instruction(keyword.upper(), value.strip(), start))
        pending = []
    if pending:
        raise ValueError("the file ends inside a continued line")
    return instructions


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """One list per FROM, each starting with its FROM. ARGs before the first FROM are the
    build's global arguments: a FROM that names one (`FROM ${BASE}`, `FROM $BASE`) gets its
    default, as a build without `--build-arg` does (base_args gives the names and defaults)."""
    defaults = base_args(instructions)
    result: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "ARG" and not result:
            continue
        if instruction.keyword == "FROM":
            value = instruction.value
            for name, default in defaults.items():
                value = value.replace("${" + name + "}", default)
                value = re.sub(rf"\${name}\b", default.replace("\\", "\\\\"), value)
            result.append([Instruction("FROM", value, instruction.line)])
        elif not result:
            raise ValueError(f"line {instruction.line}: only ARG comes before the first FROM")
        else:
            result[-1].append(instruction)
    if not result:
        raise ValueError("a Dockerfile has a FROM")
    return result


def base_args(instructions: list[Instruction]) -> dict[str, str]:
    """The ARGs before the first FROM, name -> default (`ARG BASE=x` -> {"BASE": "x"})."""
    found: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword != "ARG":
            break
        name, _, default = instruction.value.partition("=")
        found[name.strip()] = default.strip()
    return found


def apt_packages(run: Instruction) -> list[str]:
    """The packages an `apt-get install` in a RUN line names (options left out)."""
    commands: list[list[str]] = [[]]
    for word in shlex.split(run.value):
        if word in {"&&", "||", ";"}:
            commands.append([])
        else:
            commands[-1].append(word)
    packages: list[str] = []
    for words in commands:
        if words[:1] == ["apt-get"] and "install" in words:
            after = words[words.index("install") + 1 :]
            packages += [word for word in after if not word.startswith("-")]
    return packages


# -- Debian's index ---------------------------------------------------------------------------

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def debian_archive_uri() -> str:
    """The Debian archive this machine's apt is configured with (its main suite, not -security
    or -updates), so that the test reaches Debian the way apt-get here does."""
    listed = subprocess.run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI) $(RELEASE) $(TARGET_OF)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    codename = _os_release().get("VERSION_CODENAME", "")
    for line in listed:
        parts = line.split()
        if len(parts) == 3 and parts[1] == codename and parts[2] == "deb":
            return parts[0]
    raise AssertionError(f"apt here lists no Debian archive for {codename!r}: {listed[:5]}")


def _os_release() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        values[key] = value.strip('"')
    return values


class DebianIndex:
    """bookworm's main component for the given architectures, in a private apt state directory
    (nothing of the machine's apt is changed; root is not needed). Kept under `home` between
    runs, so a later `apt-get update` only asks whether the index changed."""

    def __init__(self, home: Path, release: str, architectures: list[str]) -> None:
        self.home = home
        self.release = release
        self.architectures = architectures
        for sub in ("lists/partial", "archives/partial", "parts", "preferences.d"):
            (home / sub).mkdir(parents=True, exist_ok=True)
        (home / "status").touch()
        arches = ",".join(architectures)
        (home / "sources.list").write_text(
            f"deb [arch={arches} signed-by={KEYRING}] {debian_archive_uri()} {release} main\n",
            encoding="utf-8",
        )

    def _options(self) -> list[str]:
        home = self.home
        options = {
            "Dir::State::Lists": f"{home}/lists",
            "Dir::State::status": f"{home}/status",
            "Dir::Cache": f"{home}/cache",
            "Dir::Cache::archives": f"{home}/archives",
            "Dir::Etc::SourceList": f"{home}/sources.list",
            "Dir::Etc::SourceParts": f"{home}/parts",
            "Dir::Etc::PreferencesParts": f"{home}/preferences.d",
            "Dir::Etc::Preferences": f"{home}/preferences.d/none",
            "APT::Architecture": self.architectures[0],
            "Acquire::Languages": "none",
            "Debug::NoLocking": "1",
            "APT::Sandbox::User": "root",
        }
        for target in ("DEP-11", "DEP-11-icons", "DEP-11-icons-small", "Contents-deb"):
            options[f"Acquire::IndexTargets::deb::{target}::DefaultEnabled"] = "false"
        flat = [item for key, value in options.items() for item in ("-o", f"{key}={value}")]
        for arch in self.architectures:
            flat += ["-o", f"APT::Architectures::={arch}"]
        return flat

    def update(self) -> None:
        result = subprocess.run(
            ["apt-get", *self._options(), "-q", "update"],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if result.returncode != 0 or "Err:" in result.stdout:
            raise AssertionError(
                f"apt-get update of {self.release}: {result.stdout}{result.stderr}"
            )

    def show(self, package: str, arch: str) -> dict[str, str]:
        """The index's fields of `package` for `arch` (its highest version)."""
        result = subprocess.run(
            ["apt-cache", *self._options(), "show", "--no-all-versions", f"{package}:{arch}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"{package}:{arch} is not in {self.release}: {result.stderr}")
        fields: dict[str, str] = {}
        for line in result.stdout.splitlines():
            if line and not line[0].isspace() and ": " in line:
                key, _, value = line.partition(": ")
                fields[key] = value
        return fields

    def contents(self, package: str, arch: str) -> str:
        """`dpkg-deb -c` of the package, downloaded into a temporary directory."""
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                ["apt-get", *self._options(), "-q", "download", f"{package}:{arch}"],
                cwd=scratch,
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            )
            (deb,) = Path(scratch).glob("*.deb")
            return subprocess.run(
                ["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True
            ).stdout
