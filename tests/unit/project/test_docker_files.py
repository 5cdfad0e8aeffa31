"""The docker/ files for users, checked as far as a machine without a Docker engine can: the
Dockerfile's instructions and the compose file parse and agree with each other, the packages
the image installs exist in its pinned Debian release for amd64 and arm64 (Debian's index, read
by apt), the image's health probe answers as Docker expects, and its entry point runs from a
wheel installed into a fresh virtualenv. Only `docker compose config`, which needs the compose
plugin, is left to machines that have it."""

from __future__ import annotations

import fnmatch
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mm2.localcluster import KAFKA_VERSION
from tests.support.dockerfile import (
    DebianIndex,
    Instruction,
    apt_packages,
    base_args,
    read_dockerfile,
    stages,
)
from tests.support.paths import REPO

ROOT = REPO
DOCKER = ROOT / "docker"
ARCHITECTURES = ["amd64", "arm64"]


def _stages() -> list[list[Instruction]]:
    return stages(read_dockerfile((DOCKER / "Dockerfile").read_text(encoding="utf-8")))


def _runtime() -> list[Instruction]:
    return _stages()[-1]


def _only(stage: list[Instruction], keyword: str) -> Instruction:
    found = [i for i in stage if i.keyword == keyword]
    assert len(found) == 1, f"{keyword}: {found}"
    return found[0]


def _release(image: str) -> str:
    """`python:3.11-slim-bookworm` -> `bookworm`: the tag must name the Debian release."""
    match = re.fullmatch(r"python:3\.11(?:\.\d+)?-slim-([a-z]+)", image)
    assert match, f"{image}: not python:3.11-slim-<debian release>, so Debian is not pinned"
    return match.group(1)


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


# -- the Dockerfile ------------------------------------------------------------------------------


def test_reader_joins_continuations_and_refuses_unknown_instructions() -> None:
    text = 'FROM a\n# note\nRUN one \\\n  # inside\n  two\nCMD ["x"]\n'
    assert [(i.keyword, i.value, i.line) for i in read_dockerfile(text)] == [
        ("FROM", "a", 1),
        ("RUN", "one two", 3),
        ("CMD", '["x"]', 6),
    ]
    with pytest.raises(ValueError, match="unknown instruction 'RUNN'"):
        read_dockerfile("FROM a\nRUNN x\n")
    with pytest.raises(ValueError, match="continued line"):
        read_dockerfile("FROM a\nRUN x \\\n")


def test_stages_give_a_from_its_global_arguments_default() -> None:
    text = "ARG BASE=img:1\nFROM ${BASE} AS one\nRUN x\nFROM $BASE\n"
    instructions = read_dockerfile(text)
    assert base_args(instructions) == {"BASE": "img:1"}
    assert [[(i.keyword, i.value) for i in s] for s in stages(instructions)] == [
        [("FROM", "img:1 AS one"), ("RUN", "x")],
        [("FROM", "img:1")],
    ]
    with pytest.raises(ValueError, match="only ARG comes before the first FROM"):
        stages(read_dockerfile("RUN x\nFROM a\n"))


def test_every_stage_builds_on_python_311_slim_with_the_same_pinned_debian_release() -> None:
    images = [stage[0].value.split()[0] for stage in _stages()]
    assert len(images) == 2, "a wheel stage and the runtime stage"
    assert {_release(image) for image in images} == {"bookworm"}


def test_both_stages_take_their_base_from_one_build_argument() -> None:
    # scripts/build-image.sh gives --build-arg BASE=<a bookworm made by debootstrap>
    instructions = read_dockerfile((DOCKER / "Dockerfile").read_text(encoding="utf-8"))
    assert base_args(instructions) == {"BASE": "python:3.11-slim-bookworm"}
    written = [i.value.split()[0] for i in instructions if i.keyword == "FROM"]
    assert written == ["${BASE}", "${BASE}"]


def test_mm2_lives_in_a_virtualenv_whose_bin_comes_first_on_path() -> None:
    # so `pip` and `python` are the venv's on either base: python's image keeps its python in
    # /usr/local/bin, Debian's in /usr/bin (and refuses pip installs outside a venv)
    for stage in _stages():
        runs = [i.value for i in stage if i.keyword == "RUN"]
        venv = runs.index("python3 -m venv /opt/mm2")
        assert venv < min(k for k, run in enumerate(runs) if run.startswith("pip "))
        env = " ".join(i.value for i in stage if i.keyword == "ENV")
        assert "PATH=/opt/mm2/bin:$PATH" in env.split()
    assert "PYSPARK_PYTHON=/opt/mm2/bin/python" in _only(_runtime(), "ENV").value.split()


def test_the_runtime_installs_mm2_from_the_wheel_the_first_stage_builds() -> None:
    wheel_stage, runtime = _stages()
    name = wheel_stage[0].value.split()[-1]
    assert wheel_stage[0].value.split()[1].upper() == "AS"
    build = [i.value for i in wheel_stage if i.keyword == "RUN"]
    assert build == [
        "python3 -m venv /opt/mm2",
        "pip wheel --no-cache-dir --no-deps --wheel-dir /dist .",
    ]
    copies = [i.flags_and_rest() for i in runtime if i.keyword == "COPY"]
    assert ({"from": name}, "/dist/ /tmp/dist/") in copies
    installs = [i.value for i in runtime if i.keyword == "RUN" and "pip install" in i.value]
    assert installs == [
        "pip install --no-cache-dir -c /tmp/constraints.txt /tmp/dist/*.whl"
        " && rm -rf /tmp/dist /tmp/constraints.txt"
    ]
    # nothing of the sources reaches the runtime stage but the wheel, the constraints make uses
    # too, and the health probe
    assert ({}, "constraints.txt /tmp/constraints.txt") in copies
    assert all(
        rest
        in {
            "docker/healthcheck.py /usr/local/lib/mm2/healthcheck.py",
            "constraints.txt /tmp/constraints.txt",
        }
        or flags
        for flags, rest in copies
    )


def test_java_home_names_no_architecture_and_the_jre_is_17() -> None:
    runtime = _runtime()
    (install,) = [i for i in runtime if i.keyword == "RUN" and "apt-get" in i.value]
    assert apt_packages(install) == ["openjdk-17-jre-headless", "default-jre-headless"]
    env = _only(runtime, "ENV").value
    java_home = re.search(r"JAVA_HOME=(\S+)", env)
    assert java_home, env
    assert java_home.group(1) == "/usr/lib/jvm/default-java"
    assert not any(arch in env for arch in (*ARCHITECTURES, "x86_64", "aarch64"))


def test_the_mirror_runs_as_a_non_root_user_with_its_state_on_a_volume() -> None:
    runtime = _runtime()
    user = _only(runtime, "USER").value
    assert user not in {"root", "0"} and not user.startswith(("root:", "0:"))
    volume = _only(runtime, "VOLUME").exec_form()
    assert volume == ["/var/lib/mm2"]
    user_index = runtime.index(_only(runtime, "USER"))
    setup = " ".join(i.value for i in runtime[:user_index] if i.keyword == "RUN")
    assert (
        f"useradd --system --uid 10001 --user-group --create-home --home-dir /home/{user} {user}"
        in setup
    )
    assert f"chown {user}:{user} /var/lib/mm2" in setup
    # the VOLUME comes after the chown, so a fresh volume starts owned by the user
    assert runtime.index(_only(runtime, "VOLUME")) > user_index
    assert _only(runtime, "WORKDIR").value == "/var/lib/mm2"


def test_the_healthcheck_probes_the_rest_health_endpoint() -> None:
    runtime = _runtime()
    check = _only(runtime, "HEALTHCHECK")
    flags, rest = check.flags_and_rest()
    assert set(flags) == {"interval", "timeout", "start-period", "retries"}
    keyword, _, command = rest.partition(" ")
    assert keyword == "CMD"
    probe = json.loads(command)
    assert probe == ["python", "/usr/local/lib/mm2/healthcheck.py"]
    copied = [i.flags_and_rest()[1].split() for i in runtime if i.keyword == "COPY"]
    assert ["docker/healthcheck.py", probe[1]] in copied
    assert _only(runtime, "EXPOSE").value == "8083"


def test_the_entry_point_is_a_script_the_wheel_installs() -> None:
    runtime = _runtime()
    entry = _only(runtime, "ENTRYPOINT").exec_form()
    assert entry == ["connect-mirror-maker"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert entry[0] in scripts["scripts"]
    assert _only(runtime, "CMD").exec_form() == ["/etc/mm2/mm2.properties"]


def _ignored(relative: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves `relative` (a path in the context, / separated) out."""
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative.split("/")[-1], bare):
            return True
    return False


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_build_context_leaves_out_the_virtualenv_and_git_but_not_the_sources() -> None:
    patterns = _dockerignore()
    for heavy in (".venv", ".git", "mm2/__pycache__", "mm2.egg-info", "bench/results"):
        assert _ignored(heavy, patterns), heavy
    for needed in ("pyproject.toml", "README.md", "mm2", "docker/healthcheck.py"):
        assert not _ignored(needed, patterns), needed


# -- Debian: the packages exist in the pinned release, for both architectures --------------------


@pytest.fixture(scope="module")
def debian_index() -> DebianIndex:
    release = _release(_runtime()[0].value.split()[0])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    index = DebianIndex(cache / "mm2" / "debian-index" / release, release, ARCHITECTURES)
    index.update()  # a Debian archive that does not answer fails the test, never skips it
    return index


@pytest.mark.system
@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_pinned_release_has_every_package_the_image_installs(
    debian_index: DebianIndex, arch: str
) -> None:
    (install,) = [i for i in _runtime() if i.keyword == "RUN" and "apt-get" in i.value]
    for package in apt_packages(install):
        assert debian_index.show(package, arch)["Architecture"] == arch
    jre = debian_index.show("openjdk-17-jre-headless", arch)
    assert jre["Version"].startswith("17."), jre["Version"]
    default = debian_index.show("default-jre-headless", arch)
    assert "openjdk-17-jre-headless" in [
        d.strip().split()[0] for d in default["Depends"].split(",")
    ]


@pytest.mark.system
@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_java_home_is_a_link_to_that_architectures_jre_17(
    debian_index: DebianIndex, arch: str
) -> None:
    listing = debian_index.contents("default-jre-headless", arch)
    assert f"./usr/lib/jvm/default-java -> java-1.17.0-openjdk-{arch}" in listing


# -- the compose file ----------------------------------------------------------------------------


def _services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


def test_compose_defines_two_clusters_and_the_mirror_built_from_the_dockerfile() -> None:
    services = _services()
    assert set(services) == {"primary", "backup", "mirror"}
    assert services["mirror"]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    for name in ("primary", "backup"):
        assert services[name]["image"] == f"apache/kafka:{KAFKA_VERSION}"
        env = services[name]["environment"]
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert env["KAFKA_ADVERTISED_LISTENERS"].startswith(f"PLAINTEXT://{name}:9092,")


def _listeners(value: str) -> dict[str, tuple[str, int]]:
    found = {}
    for item in value.split(","):
        name, _, address = item.partition("://")
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port))
    return found


def test_each_cluster_is_published_for_host_tools_on_the_port_it_advertises() -> None:
    host_ports = set()
    for name in ("primary", "backup"):
        service = _services()[name]
        env = service["environment"]
        listening = _listeners(env["KAFKA_LISTENERS"])
        advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        protocols = dict(
            p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
        )
        assert set(advertised) == {"PLAINTEXT", "HOST"}
        assert set(listening) <= set(protocols)
        host, port = advertised["HOST"]
        assert host == "localhost"
        published = [str(p).split(":") for p in service["ports"]]
        # 127.0.0.1:<host port>:<container port>, the container port being the HOST listener's
        assert published == [["127.0.0.1", str(port), str(listening["HOST"][1])]]
        host_ports.add(port)
    assert len(host_ports) == 2


def test_compose_waits_for_healthy_clusters_and_probes_the_mirror_like_the_image() -> None:
    services = _services()
    for name in ("primary", "backup"):
        check = services[name]["healthcheck"]
        assert check["test"][0] == "CMD" and "kafka-broker-api-versions.sh" in check["test"][1]
        assert check["retries"] >= 1
    mirror = services["mirror"]
    assert mirror["depends_on"] == {
        "primary": {"condition": "service_healthy"},
        "backup": {"condition": "service_healthy"},
    }
    image_probe = _only(_runtime(), "HEALTHCHECK").flags_and_rest()[1].partition(" ")[2]
    assert mirror["healthcheck"]["test"] == ["CMD", *json.loads(image_probe)]


def test_compose_mounts_the_config_the_image_reads_and_the_state_volume() -> None:
    mirror = _services()["mirror"]
    command = mirror["command"]
    assert command == _only(_runtime(), "CMD").exec_form()
    assert f"./mm2.properties:{command[0]}:ro" in mirror["volumes"]
    state = _only(_runtime(), "VOLUME").exec_form()[0]
    assert f"mm2-state:{state}" in mirror["volumes"]
    assert "mm2-state" in _compose()["volumes"]
    assert mirror["ports"] == ["127.0.0.1:8083:8083"]


def test_compose_mm2_properties_reaches_the_clusters_inside_the_compose_network() -> None:
    from mm2.config import load

    config = load(DOCKER / "mm2.properties")
    assert [f.name for f in config.enabled_flows] == ["primary->backup"]
    assert config.flow("primary", "backup").settings.source.replication_factor == 1
    assert config.raw["mm2.state.dir"] == _only(_runtime(), "VOLUME").exec_form()[0]
    for name in ("primary", "backup"):
        advertised = _listeners(_services()[name]["environment"]["KAFKA_ADVERTISED_LISTENERS"])
        host, port = advertised["PLAINTEXT"]
        assert config.raw[f"{name}.bootstrap.servers"] == f"{host}:{port}"


def _compose_plugin() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.system
@pytest.mark.skipif(
    not _compose_plugin(),
    reason="compose's own validation needs the `docker compose` plugin; the file's structure "
    "is checked above",
)
def test_docker_compose_config_accepts_the_file() -> None:
    result = subprocess.run(
        ["docker", "compose", "-f", str(DOCKER / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# -- the health probe ----------------------------------------------------------------------------


class _Health(http.server.BaseHTTPRequestHandler):
    """/health answers what the test set; /auth wants Basic mirror:secret."""

    status = 200

    def do_GET(self) -> None:
        if self.path == "/auth":
            wanted = "Basic bWlycm9yOnNlY3JldA=="  # mirror:secret
            code = 200 if self.headers.get("Authorization") == wanted else 401
        else:
            code = type(self).status
        body = json.dumps({"status": "healthy" if code == 200 else "starting"}).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[tuple[str, type[_Health]]]:
    handler = type("Handler", (_Health,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _probe(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MM2_HEALTH")}
    return subprocess.run(
        [sys.executable, str(DOCKER / "healthcheck.py")],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def test_health_probe_is_healthy_on_200_and_not_on_503(
    health_server: tuple[str, type[_Health]],
) -> None:
    url, handler = health_server
    assert _probe({"MM2_HEALTH_URL": f"{url}/health"}).returncode == 0
    handler.status = 503
    starting = _probe({"MM2_HEALTH_URL": f"{url}/health"})
    assert starting.returncode == 1
    assert "503" in starting.stderr and "starting" in starting.stderr


def test_health_probe_sends_basic_credentials_from_a_file(
    health_server: tuple[str, type[_Health]], tmp_path: Path
) -> None:
    url, _ = health_server
    assert _probe({"MM2_HEALTH_URL": f"{url}/auth"}).returncode == 1
    credentials = tmp_path / "health-credentials"
    credentials.write_text("mirror:secret\n", encoding="utf-8")
    env = {"MM2_HEALTH_URL": f"{url}/auth", "MM2_HEALTH_CREDENTIALS": str(credentials)}
    assert _probe(env).returncode == 0
    missing = _probe({**env, "MM2_HEALTH_CREDENTIALS": str(tmp_path / "absent")})
    assert missing.returncode == 1 and "MM2_HEALTH_CREDENTIALS" in missing.stderr


def test_health_probe_is_unhealthy_when_nothing_listens() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago and is closed now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _probe(
        {"MM2_HEALTH_URL": f"http://127.0.0.1:{port}/health", "MM2_HEALTH_TIMEOUT": "2"}
    )
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr


# -- the entry point, from the wheel -------------------------------------------------------------


def _copy_context(destination: Path) -> None:
    """The build context as docker would send it: the tree less what .dockerignore names."""
    patterns = _dockerignore()

    def ignore(directory: str, names: list[str]) -> set[str]:
        base = Path(directory).relative_to(ROOT).as_posix()
        prefix = "" if base == "." else f"{base}/"
        return {name for name in names if _ignored(prefix + name, patterns)}

    shutil.copytree(ROOT, destination, ignore=ignore)


@pytest.mark.system
@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_entry_point_starts_from_the_wheel_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    context = tmp_path / "context"
    _copy_context(context)
    assert not (context / ".venv").exists()
    dist = tmp_path / "dist"
    # the wheel stage's command (a copy of the context, so the checkout gets no build/ folder)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), "."],
        cwd=context,
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("mm2-*.whl")
    # one top-level import package of its own: everything the wheel holds is mm2/ or its metadata
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
        (info,) = [top for top in tops if top.endswith(".dist-info")]
        assert tops == {"mm2", info}, tops
        assert archive.read(f"{info}/top_level.txt").split() == [b"mm2"]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "-c",
            str(ROOT / "constraints.txt"),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    # the runtime only, at the pinned versions: no test or bench tools, no pandas/pyarrow
    frozen = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze", "--exclude", "mm2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    pinned = set((ROOT / "constraints.txt").read_text().split())
    assert frozen and set(frozen) <= pinned, set(frozen) - pinned
    names = {line.split("==")[0].lower() for line in frozen}
    assert not names & {"pytest", "mypy", "matplotlib", "pandas", "pyarrow", "testcontainers"}

    # run from elsewhere, with nothing of the checkout on the path: only the wheel can answer
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import mm2; print(mm2.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where

    entry = _only(_runtime(), "ENTRYPOINT").exec_form()
    sample = tmp_path / "mm2.properties"
    shutil.copy(DOCKER / "mm2.properties", sample)
    ran = subprocess.run(
        [str(venv / "bin" / entry[0]), *entry[1:], "--print-config", str(sample)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    flows = json.loads(ran.stdout)["flows"]
    enabled = [(f["source"], f["target"]) for f in flows if f["enabled"]]
    assert enabled == [("primary", "backup")]
