"""When the driver JVM maps Spark's class-data archive, and when it writes the list to make one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mm2.pipeline.class_archive import ClassArchive


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    java_home = tmp_path / "jdk"
    java_home.mkdir()
    (java_home / "release").write_text('JAVA_VERSION="17.0.15"\n', encoding="utf-8")
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "JAVA_HOME": str(java_home)}


def made(env: dict[str, str], jars: list[Path], **changes: object) -> ClassArchive:
    """An archive as a first start leaves it: the file and its manifest."""
    archive = ClassArchive(env)
    archive.directory.mkdir(parents=True)
    archive.archive.write_bytes(b"archive")
    java_home = Path(env["JAVA_HOME"])
    manifest = {
        "java_home": str(java_home.resolve()),
        "release": (java_home / "release").read_text(encoding="utf-8"),
        "spark_home": "",
        "classpath": [str(j) for j in jars],
        "jars": {str(j): [j.stat().st_size, j.stat().st_mtime_ns] for j in jars},
        **changes,
    }
    (archive.directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return archive


def a_jar(tmp_path: Path) -> Path:
    jar = tmp_path / "spark-core.jar"
    jar.write_bytes(b"PK jar")
    return jar


def test_a_first_start_writes_the_list_of_the_classes_it_loads(env: dict[str, str]) -> None:
    archive = ClassArchive(env)
    options = archive.java_options("-Dsome.option=1")
    assert options == f"-XX:DumpLoadedClassList={archive.directory}/classes-{os.getpid()}.lst"
    assert archive.directory.is_dir()


def test_files_left_by_a_process_that_ended_are_removed(env: dict[str, str]) -> None:
    archive = ClassArchive(env)
    archive.directory.mkdir(parents=True)
    dead, alive = 999999999, os.getppid()  # no such process; the one that runs the tests
    names = ("classes-{}.lst", "classes-{}.taken", "spark.jsa.{}", "manifest.json.{}")
    for name in names:
        for pid in (dead, alive):
            (archive.directory / name.format(pid)).write_text("x", encoding="utf-8")
    (archive.directory / "making.lock").write_text("", encoding="utf-8")
    archive.java_options("")
    left = sorted(p.name for p in archive.directory.iterdir())
    assert left == sorted(["making.lock", *(n.format(alive) for n in names)])


def test_a_later_start_maps_the_archive_made_for_its_jvm_and_jars(
    env: dict[str, str], tmp_path: Path
) -> None:
    archive = made(env, [a_jar(tmp_path)])
    assert archive.java_options("") == f"-XX:SharedArchiveFile={archive.archive}"


@pytest.mark.parametrize("change", ["jar", "jvm", "spark_home", "no archive"])
def test_an_archive_made_for_another_jvm_or_other_jars_is_not_mapped(
    env: dict[str, str], tmp_path: Path, change: str
) -> None:
    jar = a_jar(tmp_path)
    archive = made(env, [jar])
    if change == "jar":
        jar.write_bytes(b"PK another build of the jar")
    elif change == "jvm":
        (Path(env["JAVA_HOME"]) / "release").write_text('JAVA_VERSION="17.0.16"\n')
    elif change == "spark_home":
        env["SPARK_HOME"] = str(tmp_path / "spark")
        archive = ClassArchive(env)
    else:
        archive.archive.unlink()
    assert not archive.usable()
    assert archive.java_options("").startswith("-XX:DumpLoadedClassList=")


@pytest.mark.parametrize("own", ["-Xshare:off", "-XX:SharedArchiveFile=/opt/own.jsa"])
def test_an_operators_own_sharing_option_is_left_alone(
    env: dict[str, str], tmp_path: Path, own: str
) -> None:
    archive = made(env, [a_jar(tmp_path)])
    assert archive.java_options(f"-Xmx1g {own}") == ""


def test_a_damaged_manifest_means_no_archive(env: dict[str, str], tmp_path: Path) -> None:
    archive = made(env, [a_jar(tmp_path)])
    (archive.directory / "manifest.json").write_text("{not json", encoding="utf-8")
    assert not archive.usable()
